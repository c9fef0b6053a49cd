#!/usr/bin/env python3
"""Generates the tokenizer test corpus (seeded, no downloads):
  tests/data/tokenizer/corpus.txt          >= 5,000 lines of valid UTF-8
  tests/data/tokenizer/corpus_invalid.bin  lines of bytes with invalid UTF-8 sequences
Text is synthesized here: word salad from a built-in English list, code snippets in several
languages, scripts enumerated with Python's unicodedata (CJK, Arabic/Hebrew/Devanagari/Thai/...
with combining marks), emoji ZWJ sequences, digit runs, whitespace/newline runs, mixed-case
contractions, special-token text, decomposed (NFD) input. Only code points assigned in Python's
Unicode database (14.0 for Python 3.11) are used, so every library version agrees on them.
usage: make_tokenizer_corpus.py OUT_DIR
"""
import random
import sys
import unicodedata
import pathlib

R = random.Random(20240611)

WORDS = """the of and to in is that it was for on are as with his they at be this from have or by one
had not but what all were when we there can an your which their said if do will each about how up out
them then she many some so these would other into has more her two like him see time could no make than
first been its who now people my made over did down only way find use may water long little very after
words called just where most know get through back much before go good new write our used me man too any
day same right look think also around another came come work three word must because does part even place
well such here take why things help put years different away again off went old number great tell men
say small every found still between name should home big give air line set own under read last never us
left end along while might next sound below saw something thought both few those always looked show large
often together asked house don't world going want school important until form food keep children feet land
side without boy once animals life enough took sometimes four head above kind began almost live page got
earth need far hand high year mother light parts country father let night following picture being study
second eyes soon times story boys since white days ever paper hard near sentence better best across during
today others however sure means knew it's try told young miles sun ways thing whole hear example heard
several change answer room sea against top turned learn point city play toward five using himself usually
tokenizer engine model server request stream buffer thread kernel matrix vector tensor token byte merge
Qwen inference latency throughput benchmark""".split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE", "'Ve",
                "'M", "'LL", "'Ll", "'lL", "'D"]
SPECIAL_TEXT = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>",
                "</tool_call>", "<tool_response>", "</tool_response>", "<|vision_start|>", "<|image_pad|>",
                "<|fim_prefix|>", "<|file_sep|>", "<|audio_pad|>", "<tts_pad>",
                "<|im_end", "<|im_end|", "im_end|>", "<think", "</think", "<<think>>", "<|<|im_end|>|>",
                "<|IM_END|>", "< think>", "<think >", "<|im_start|><|im_start|>"]
CJK_WORDS = ["你好", "世界", "中国", "我们", "今天", "天气", "很好", "学习", "工作", "人力资源", "加拿大",
             "新加坡", "俱乐部", "阿拉伯", "不可思议", "各种各样", "众所周知", "全心全意", "毛泽东", "事半功倍",
             "人工智能", "机器学习", "模型", "推理", "服务器", "东京", "日本語", "ありがとう", "こんにちは",
             "カタカナ", "한국어", "안녕하세요", "대한민국"]
EMOJI = ["😀", "😂", "🥲", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "🇩🇪", "❤️", "❤️‍🔥",
         "1️⃣", "#️⃣", "🧑🏿‍🚀", "🫶🏼", "🐈‍⬛", "✌️", "☕", "🚀", "🤖", "🦀", "🐍", "👁️‍🗨️", "🏴‍☠️"]
WS = [" ", "  ", "   ", "\t", "\t\t", " \t", "\u00a0", "\u2003", "\u3000", "\u2009", "\u202f", "\u1680",
      "\u000b", "\u000c", "\u0085", "\u2028", "\u2029", "\r", "\r\n", "\n\n", "\r\n\r\n"]


def chars_by_name(*prefixes, cats=None):
    out = []
    for cp in range(0x80, 0x30000):
        c = chr(cp)
        n = unicodedata.name(c, "")
        if n and n.startswith(prefixes) and (cats is None or unicodedata.category(c) in cats):
            out.append(c)
    return out


SCRIPTS = {}
for key, prefixes in {
    "arabic": ("ARABIC",), "hebrew": ("HEBREW",), "devanagari": ("DEVANAGARI",), "thai": ("THAI",),
    "bengali": ("BENGALI",), "tamil": ("TAMIL",), "khmer": ("KHMER",), "myanmar": ("MYANMAR",),
    "tibetan": ("TIBETAN",), "cyrillic": ("CYRILLIC",), "greek": ("GREEK",), "armenian": ("ARMENIAN",),
    "georgian": ("GEORGIAN",), "ethiopic": ("ETHIOPIC",), "hangul": ("HANGUL SYLLABLE",),
    "jamo": ("HANGUL CHOSEONG", "HANGUL JUNGSEONG", "HANGUL JONGSEONG"),
    "kana": ("HIRAGANA", "KATAKANA"), "latinext": ("LATIN SMALL LETTER", "LATIN CAPITAL LETTER"),
}.items():
    letters = chars_by_name(*prefixes, cats={"Lo", "Lu", "Ll", "Lm"})
    marks = chars_by_name(*prefixes, cats={"Mn", "Mc", "Me"})
    SCRIPTS[key] = (letters, marks)
CJK = [chr(c) for c in range(0x4E00, 0x9FFF + 1)]
COMBINING = [chr(c) for c in range(0x300, 0x370)]
ALL_ASSIGNED = [chr(c) for c in range(0x20, 0x30000)
                if unicodedata.category(chr(c)) not in ("Cn", "Cs") and chr(c) != "\n"]
DIGITS_OTHER = ["٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "０１２３４５６７８９", "๐๑๒๓๔๕๖๗๘๙", "①②③", "Ⅻ", "½¾", "²³"]


def word():
    w = R.choice(WORDS)
    r = R.random()
    if r < 0.1:
        w = w.capitalize()
    elif r < 0.13:
        w = w.upper()
    return w


def prose():
    n = R.randint(3, 25)
    out = []
    for i in range(n):
        w = word()
        if i == 0:
            w = w.capitalize()
        if R.random() < 0.08:
            w += R.choice(CONTRACTIONS)
        out.append(w)
        if R.random() < 0.1:
            out[-1] += R.choice([",", ";", ":", " -", " —", "...", "!", "?"])
    s = " ".join(out) + R.choice([".", "!", "?", "", "...", "\""])
    if R.random() < 0.2:
        s = "\"" + s
    return s


def ident():
    return R.choice(["x", "i", "n", "buf", "len", "ctx", "self", "data", "result", "tmp", "fooBar",
                     "snake_case_name", "CamelCase", "__init__", "HY_MAX", "kValue", "_private", "ptr2"])


def code():
    a, b, c = ident(), ident(), ident()
    n = R.randint(0, 100000)
    tpl = R.choice([
        f"int {a} = {b}[{n}] + {c}->len; // {word()} {word()}",
        f"    for (size_t {a} = 0; {a} < {b}; {a}++) {{ {c} += {a} * {n}; }}",
        f"static inline uint32_t {a}(const uint8_t *{b}, size_t {c}) {{ return {b}[{c}] << 8; }}",
        f"#define {a.upper()}(x) ((x) & 0x{n:04X}u)",
        f"def {a}({b}, {c}={n}):\n    return [{b} ** 2 for {b} in range({c}) if {b} % 3 == 0]",
        f"\tif {a} is not None and {b} != '{word()}':  # {word()}",
        f"const {a} = async ({b}) => {{ await fetch(`/api/v1/${{{b}}}?q={n}`); }};",
        f"fn {a}<'a>({b}: &'a str) -> Result<Vec<u8>, Box<dyn Error>> {{ Ok({b}.bytes().collect()) }}",
        f"func {a}({b} int) (string, error) {{ return fmt.Sprintf(\"%d\", {b}+{n}), nil }}",
        f"SELECT {a}, COUNT(*) FROM {b} WHERE {c} >= {n} GROUP BY {a} ORDER BY 2 DESC;",
        f"<div class=\"{a}\" data-id=\"{n}\"><span>{word()}</span></div>",
        f"{{\"{a}\": {n}, \"{b}\": [true, false, null], \"{c}\": \"{word()}\\n\"}}",
        f"$ grep -rn '{a}' src/ | awk -F: '{{print $1}}' | sort -u > /tmp/{b}.txt",
        f"    let {a}: Vec<_> = {b}.iter().map(|x| x * {n}).collect::<Vec<i64>>();",
        f"{a} := make(map[string]int, {n})\n\t{a}[\"{b}\"]++",
        f"// TODO({b}): handle {word()} when {a} == NULL   ",
        f"/* {word()} {word()} */ return -{n};",
        f"x = {n}.{R.randint(0,999)}e-{R.randint(1,30)}; y = 0x{n:x}; z = 0b{n:b}",
        f"\t\t{a}->{b}.{c}[{n % 17}] |= (1u << {n % 32});\t\t",
        f"class {a.capitalize()}({b.capitalize()}):\n    \"\"\"{prose()}\"\"\"\n    pass",
    ])
    return tpl


def script_text(key):
    letters, marks = SCRIPTS[key]
    words = []
    for _ in range(R.randint(1, 10)):
        w = ""
        for _ in range(R.randint(1, 8)):
            w += R.choice(letters)
            if marks and R.random() < 0.4:
                w += R.choice(marks)
                if R.random() < 0.15:
                    w += R.choice(marks)
        words.append(w)
    sep = " " if key not in ("thai", "khmer", "myanmar", "tibetan") or R.random() < 0.5 else ""
    s = sep.join(words)
    if R.random() < 0.3:
        s += R.choice([".", "،", "؟", "।", "॥", "!", " 123", "\u200c", "\u200d"])
    return s


def cjk():
    out = ""
    for _ in range(R.randint(1, 12)):
        r = R.random()
        if r < 0.4:
            out += R.choice(CJK_WORDS)
        elif r < 0.8:
            out += "".join(R.choice(CJK) for _ in range(R.randint(1, 4)))
        elif r < 0.9:
            out += R.choice(["，", "。", "、", "「", "」", "！", "？", "：", "（", "）", " "])
        else:
            out += word()
    return out


def emoji():
    return "".join(R.choice(EMOJI + [" ", "", word(), "!"]) for _ in range(R.randint(1, 10)))


def digits():
    r = R.random()
    if r < 0.3:
        return str(R.randint(0, 10 ** R.randint(1, 40)))
    if r < 0.5:
        return " ".join("3" * k for k in range(1, R.randint(2, 12)))
    if r < 0.7:
        return f"{R.randint(0,99999)}.{R.randint(0,99999)} {R.randint(1,12)}/{R.randint(1,31)}/{R.randint(1900,2100)} +1-555-{R.randint(100,999)}-{R.randint(1000,9999)}"
    if r < 0.85:
        return R.choice(DIGITS_OTHER) + " " + word() + R.choice(DIGITS_OTHER)
    return "v" + ".".join(str(R.randint(0, 99)) for _ in range(R.randint(2, 5))) + f" ({R.randint(0,100)}%)"


def whitespace():
    parts = []
    for _ in range(R.randint(1, 8)):
        parts.append(R.choice(WS) * R.randint(1, 4))
        if R.random() < 0.6:
            parts.append(word())
    s = "".join(parts)
    if R.random() < 0.3:
        s += " " * R.randint(1, 6)
    return s


def contractions():
    return " ".join(word() + R.choice(CONTRACTIONS) + R.choice(["", " ", "'", "s", "ll"])
                    for _ in range(R.randint(1, 8)))


def specials():
    out = ""
    for _ in range(R.randint(1, 8)):
        r = R.random()
        if r < 0.5:
            out += R.choice(SPECIAL_TEXT)
        elif r < 0.8:
            out += R.choice(["", " ", "\n", "user", "assistant", "  "]) + word()
        else:
            out += R.choice(["<", ">", "|", "<|", "|>", "</", "/>"])
    return out


def decomposed():
    src = R.choice([prose, lambda: script_text("latinext"), lambda: script_text("hangul"),
                    lambda: "Ångström café naïve résumé Việt Nam Tiếng Việt ñandú Øre Ǆ ǅ ﬁ",
                    lambda: "".join(R.choice("aeiouAEIOUnNcCyY") + R.choice(COMBINING) for _ in range(R.randint(1, 10))),
                    lambda: "\u212b \u2126 \u0344 \u1e9b\u0323 e\u0301\u0327 a\u0328\u0301 \u0958 \u2adc \u0f73"])
    s = src()
    return unicodedata.normalize(R.choice(["NFD", "NFKD", "NFD"]), s) if R.random() < 0.9 else s


def random_codepoints():
    return "".join(R.choice(ALL_ASSIGNED) for _ in range(R.randint(1, 20)))


def mixed():
    gens = [prose, code, cjk, emoji, digits, whitespace, contractions, specials]
    return R.choice([" ", "", "\t", "  "]).join(R.choice(gens)() for _ in range(R.randint(2, 4)))


def long_line():
    r = R.random()
    if r < 0.25:
        return " " * R.randint(100, 3000) + word()
    if r < 0.5:
        return "a" * R.randint(100, 2000)
    if r < 0.7:
        return "".join(R.choice(CJK) for _ in range(R.randint(200, 1500)))
    if r < 0.85:
        return "9" * R.randint(100, 1000)
    return " ".join(prose() for _ in range(30))


GENS = [(prose, 900), (code, 700), (cjk, 400), (emoji, 250), (digits, 300), (whitespace, 400),
        (contractions, 250), (specials, 300), (decomposed, 350), (random_codepoints, 300), (mixed, 450),
        (long_line, 40)] + [((lambda k=k: script_text(k)), 30) for k in SCRIPTS]


def invalid_lines():
    lines = []
    valid = ["abc", "é", "你", "😀", " ", "<|im_end|>"]
    bad = [b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
           b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80", b"\xff", b"\xfe", b"\xe4\xbd",
           b"\xf0\x9f\x98", b"\xc3", b"\xe2\x82", b"\xf0\x9f", b"\xc3\xc3\xa9", b"\xe0\xa0"]
    for _ in range(400):
        parts = []
        for _ in range(R.randint(1, 8)):
            if R.random() < 0.5:
                parts.append(R.choice(valid).encode())
            elif R.random() < 0.8:
                parts.append(R.choice(bad))
            else:
                parts.append(bytes(R.randrange(0x80, 0x100) for _ in range(R.randint(1, 4))))
        line = b"".join(parts).replace(b"\n", b"")
        lines.append(line)
    return lines


def main(out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = []
    for gen, n in GENS:
        for _ in range(n):
            items.append(gen())
    R.shuffle(items)
    text = "\n".join(items) + "\n"
    # a few blank lines and whitespace-only lines survive as their own lines
    (out / "corpus.txt").write_bytes(text.encode("utf-8"))
    (out / "corpus_invalid.bin").write_bytes(b"\n".join(invalid_lines()) + b"\n")
    print(f"corpus.txt: {text.count(chr(10))} lines, {len(text.encode())} bytes")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
