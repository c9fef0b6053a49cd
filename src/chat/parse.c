/*
 * Streaming parser of model output (see parse.h for the grammar and policies).
 * Threading: one parser per sequence.
 * Shape: all unprocessed text sits in p->buf; process() repeatedly looks at the
 * front of it in the current state and either emits and consumes a prefix, or
 * stops when the next decision needs text that has not arrived. At finish the
 * same code runs with final = 1, where "need more" becomes the end-of-text
 * answer. A tool call stays in buf until its structural end is known; the
 * walker that finds that end keeps its position between feeds, so a long call
 * streamed token by token is scanned once, not once per token.
 */
#include "chat/parse.h"

#include "chat/pyjson.h"
#include "chat/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ST_START, ST_REASON, ST_CONTENT, ST_TOOL };
enum { M_NO = 0, M_PARTIAL, M_FULL };
enum { W_OPEN, W_PARAMS, W_VALUE, W_AFTER };
enum { WR_MORE, WR_END, WR_BAD };

#define MAX_NAME 256 /* longer function / parameter names are not names */

typedef struct param_span {
    size_t nb, ne, vb, ve;
} param_span;

typedef struct walker {
    int phase;
    size_t pos;
    size_t name_b, name_e;
    const json_t *props; /* declared parameters of the called function, or NULL */
    size_t pname_b, pname_e, vstart, vscan, gscan;
    int depth;
    param_span *ps;
    size_t nps, cap;
} walker;

struct hy_chat_parser {
    hy_chat_parse_opts o;
    hy_chat_event_fn fn;
    void *user;
    hy_chat_buf buf;     /* unprocessed output */
    hy_chat_buf pend;    /* trailing whitespace held back from the current reasoning/content run */
    hy_chat_buf scratch; /* event text assembly */
    int state;
    int r_started, c_started; /* something emitted; leading whitespace is dropped until then */
    int line_start;           /* the content stream is at the start of a line */
    int implicit_end;         /* reasoning ended at a tool call: drop one later "</think>" */
    int bare;                 /* current call had no "<tool_call>" */
    int finished, oom;
    size_t n_calls, reasoning_len, content_len;
    walker w;
};

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8 sequence: a
 * delta never splits a character, even when the input was split inside one. */
static size_t utf8_whole(const char *s, size_t n) {
    size_t i = n;
    for (int back = 0; back < 3 && i > 0; back++) {
        unsigned char c = (unsigned char)s[i - 1];
        if ((c & 0xc0) != 0x80) {
            size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
            return (c >= 0xc0 && c < 0xf8 && n - (i - 1) < need) ? i - 1 : n;
        }
        i--;
    }
    return n;
}

static int match_at(const char *s, size_t n, size_t pos, const char *tag) {
    size_t tl = strlen(tag), avail = n - pos;
    if (avail >= tl) return memcmp(s + pos, tag, tl) ? M_NO : M_FULL;
    return memcmp(s + pos, tag, avail) ? M_NO : M_PARTIAL;
}

/* ---- events ---------------------------------------------------------------------- */

static void emit(hy_chat_parser *p, hy_chat_event_kind kind, const char *s, size_t n) {
    hy_chat_event ev = {.kind = kind, .text = s, .len = n};
    if (kind == HY_CHAT_EV_REASONING) p->reasoning_len += n;
    else p->content_len += n;
    p->fn(p->user, &ev);
}

/* Reasoning/content text with leading whitespace dropped until the run starts and trailing
 * whitespace held back until more text follows it. */
static void emit_text(hy_chat_parser *p, hy_chat_event_kind kind, const char *s, size_t n) {
    int *started = kind == HY_CHAT_EV_REASONING ? &p->r_started : &p->c_started;
    if (!*started)
        while (n && is_ws(*s)) s++, n--;
    if (!n) return;
    if (kind == HY_CHAT_EV_CONTENT) p->line_start = s[n - 1] == '\n';
    size_t k = n;
    while (k && is_ws(s[k - 1])) k--;
    if (!k) {
        hy_chat_buf_put(&p->pend, s, n);
        return;
    }
    hy_chat_buf_truncate(&p->scratch, 0);
    hy_chat_buf_put(&p->scratch, p->pend.p, p->pend.len);
    hy_chat_buf_put(&p->scratch, s, k);
    hy_chat_buf_truncate(&p->pend, 0);
    hy_chat_buf_put(&p->pend, s + k, n - k);
    if (p->scratch.oom || p->pend.oom) {
        p->oom = 1;
        return;
    }
    *started = 1;
    emit(p, kind, p->scratch.p, p->scratch.len);
}

/* ---- tool schemas and value conversion (vLLM qwen3_coder _convert_param_value) ----- */

static const json_t *tool_fn(const json_t *tool) {
    const json_t *f = json_object_get(tool, "function");
    return json_is_object(f) ? f : tool;
}

static const json_t *find_tool(const json_t *tools, const char *name, size_t n) {
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const json_t *nm = json_object_get(tool_fn(json_array_get(tools, i)), "name");
        if (json_is_string(nm) && json_string_length(nm) == n && !memcmp(json_string_value(nm), name, n))
            return tool_fn(json_array_get(tools, i));
    }
    return NULL;
}

static const json_t *find_props(const json_t *tools, const char *name, size_t n) {
    const json_t *props = json_object_get(json_object_get(find_tool(tools, name, n), "parameters"), "properties");
    return json_is_object(props) && json_object_size(props) ? props : NULL;
}

static int ieq(const char *s, size_t n, const char *word) {
    size_t m = strlen(word);
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return 0;
    }
    return 1;
}

static int starts(const char *s, const char *pre) { return !strncmp(s, pre, strlen(pre)); }

/* Python int(text) for ASCII input: whitespace, sign, digits with single '_' between. */
static int py_int(const char *s, size_t n, long long *out) {
    size_t b, e;
    hy_py_strip(s, n, &b, &e);
    char tmp[64];
    size_t k = 0, i = b;
    if (i < e && (s[i] == '+' || s[i] == '-')) tmp[k++] = s[i++];
    size_t digits = 0;
    for (; i < e; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (k + 1 >= sizeof tmp) return -1;
            tmp[k++] = s[i];
            digits++;
        } else if (s[i] == '_' && digits && i + 1 < e && s[i + 1] >= '0' && s[i + 1] <= '9') {
            continue;
        } else {
            return -1;
        }
    }
    if (!digits) return -1;
    tmp[k] = 0;
    errno = 0;
    char *end;
    long long v = strtoll(tmp, &end, 10);
    if (errno || *end) return -1; /* Python would give a big int; keep the text */
    *out = v;
    return 0;
}

/* Python float(text): returns 0 and *out, or -1 when Python would raise. */
static int py_float(const char *s, size_t n, double *out) {
    size_t b, e;
    hy_py_strip(s, n, &b, &e);
    char tmp[128];
    size_t k = 0, i = b;
    int neg = 0;
    if (e - b >= sizeof tmp) return -1;
    if (i < e && (s[i] == '+' || s[i] == '-')) neg = s[i] == '-', tmp[k++] = s[i++];
    const char *words[] = {"inf", "infinity", "nan"};
    for (int w = 0; w < 3; w++) {
        if (ieq(s + i, e - i, words[w])) {
            *out = w == 2 ? NAN : (neg ? -INFINITY : INFINITY);
            return 0;
        }
    }
    int digits = 0, dot = 0, exp = 0, exp_digits = 0;
    for (; i < e; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            tmp[k++] = c;
            if (exp) exp_digits++;
            else digits++;
        } else if (c == '_' && k && tmp[k - 1] >= '0' && tmp[k - 1] <= '9' && i + 1 < e && s[i + 1] >= '0' &&
                   s[i + 1] <= '9') {
            continue;
        } else if (c == '.' && !dot && !exp) {
            tmp[k++] = c, dot = 1;
        } else if ((c == 'e' || c == 'E') && !exp && digits) {
            tmp[k++] = c, exp = 1;
            if (i + 1 < e && (s[i + 1] == '+' || s[i + 1] == '-')) tmp[k++] = s[++i];
        } else {
            return -1;
        }
    }
    if (!digits || (exp && !exp_digits)) return -1;
    tmp[k] = 0;
    *out = strtod(tmp, NULL);
    return 0;
}

static json_t *convert_value(const char *v, size_t n, const char *pname, size_t pn, const json_t *props) {
    const json_t *cfg = props ? json_object_getn(props, pname, pn) : NULL;
    if (!cfg) return hy_pyjson_string_lossy(v, n);
    char type[128] = "string";
    int allows_null = 0;
    hy_chat_buf t;
    hy_chat_buf_init(&t);
    if (json_is_object(cfg) && json_object_get(cfg, "type")) {
        hy_pyjson_str(&t, json_object_get(cfg, "type"));
    } else if (json_is_object(cfg) && json_object_get(cfg, "anyOf")) {
        const json_t *any = json_object_get(cfg, "anyOf");
        int picked = 0;
        hy_chat_buf_puts(&t, "string");
        for (size_t i = 0; i < json_array_size(any); i++) {
            const json_t *opt = json_array_get(any, i);
            if (!json_is_object(opt) || !json_object_get(opt, "type")) continue;
            hy_chat_buf o;
            hy_chat_buf_init(&o);
            hy_pyjson_str(&o, json_object_get(opt, "type"));
            size_t ob, oe;
            hy_py_strip(o.p ? o.p : "", o.len, &ob, &oe);
            if (ieq(o.p + ob, oe - ob, "null")) {
                allows_null = 1;
            } else if (!picked) {
                hy_chat_buf_truncate(&t, 0);
                hy_chat_buf_put(&t, o.p ? o.p : "", o.len);
                picked = 1;
            }
            hy_chat_buf_free(&o);
        }
    }
    if (t.len) {
        size_t tb, te;
        hy_py_strip(t.p, t.len, &tb, &te);
        size_t l = te - tb < sizeof type - 1 ? te - tb : sizeof type - 1;
        for (size_t i = 0; i < l; i++) {
            char c = t.p[tb + i];
            type[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        }
        type[l] = 0;
    }
    hy_chat_buf_free(&t);
    if (!strcmp(type, "null")) allows_null = 1;
    int is_null_word = ieq(v, n, "null") || ieq(v, n, "none");
    if (allows_null && is_null_word) return json_null();
    const char *str_types[] = {"string", "str", "text", "varchar", "char", "enum"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(type, str_types[i])) return hy_pyjson_string_lossy(v, n);
    if (is_null_word) return json_null();
    if (starts(type, "int") || starts(type, "uint") || starts(type, "long") || starts(type, "short") ||
        starts(type, "unsigned")) {
        long long x;
        return py_int(v, n, &x) ? hy_pyjson_string_lossy(v, n) : json_integer(x);
    }
    if (starts(type, "num") || starts(type, "float")) {
        double d;
        if (py_float(v, n, &d) || !isfinite(d)) return hy_pyjson_string_lossy(v, n);
        if (d == trunc(d) && fabs(d) < 9.2e18) return json_integer((long long)d);
        return json_real(d);
    }
    if (!strcmp(type, "boolean") || !strcmp(type, "bool") || !strcmp(type, "binary"))
        return json_boolean(ieq(v, n, "true"));
    int container = !strcmp(type, "object") || !strcmp(type, "array") || !strcmp(type, "arr") ||
                    starts(type, "dict") || starts(type, "list");
    if (container) {
        json_t *j = json_loadb(v, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (j) {
            if (json_is_string(j)) {
                json_t *again = hy_pyjson_literal_eval(json_string_value(j), json_string_length(j));
                if (again) {
                    json_decref(j);
                    j = again;
                }
            }
            return j;
        }
    }
    json_t *lit = hy_pyjson_literal_eval(v, n);
    if (!lit) return hy_pyjson_string_lossy(v, n);
    if (container && json_is_string(lit)) {
        json_t *again = hy_pyjson_literal_eval(json_string_value(lit), json_string_length(lit));
        if (again) {
            json_decref(lit);
            lit = again;
        }
    }
    return lit;
}

/* ---- tool-call walker --------------------------------------------------------------- */

static int name_in(const json_t *props, const char *s, size_t n) { return props && json_object_getn(props, s, n); }

static int add_param(hy_chat_parser *p, size_t vb, size_t ve) {
    walker *w = &p->w;
    if (w->nps == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 8;
        param_span *ps = realloc(w->ps, cap * sizeof *ps);
        if (!ps) return p->oom = 1, -1;
        w->ps = ps, w->cap = cap;
    }
    w->ps[w->nps++] = (param_span){w->pname_b, w->pname_e, vb, ve};
    return 0;
}

/* After a "</parameter>": is the next tag structural? 1 yes, 0 no, -1 undecided. */
static int structural_after(const walker *w, const char *s, size_t n, size_t r) {
    int m = match_at(s, n, r, "<parameter=");
    if (m == M_FULL) {
        if (!w->props) return 1;
        const char *gt = memchr(s + r + 11, '>', n - r - 11);
        if (!gt) return -1;
        return name_in(w->props, s + r + 11, (size_t)(gt - (s + r + 11)));
    }
    int m2 = match_at(s, n, r, "</function>"), m3 = match_at(s, n, r, "</tool_call>");
    if (m2 == M_FULL || m3 == M_FULL) return 1;
    if (m == M_PARTIAL || m2 == M_PARTIAL || m3 == M_PARTIAL) return -1;
    return 0;
}

/* vLLM _find_true_function_end from q: a "</function>" followed by whitespace and then
 * "</tool_call>" or the end. */
static size_t true_function_end(const char *s, size_t n, size_t q) {
    for (;;) {
        const char *f = memmem(s + q, n - q, "</function>", 11);
        if (!f) return (size_t)-1;
        size_t r = (size_t)(f - s) + 11;
        while (r < n && is_ws(s[r])) r++;
        if (r == n || match_at(s, n, r, "</tool_call>") == M_FULL) return (size_t)(f - s);
        q = (size_t)(f - s) + 11;
    }
}

/* Value ended without a structural </parameter> (final only): vLLM's two fallbacks. */
static void value_fallback(hy_chat_parser *p, const char *s, size_t n) {
    walker *w = &p->w;
    for (size_t x = w->vstart; x < n; x++) {
        if (match_at(s, n, x, "<parameter=") != M_FULL || !(x == w->vstart || s[x - 1] == '\n')) continue;
        if (w->props) {
            const char *gt = memchr(s + x + 11, '>', n - x - 11);
            if (!gt || !name_in(w->props, s + x + 11, (size_t)(gt - (s + x + 11)))) continue;
        }
        add_param(p, w->vstart, x);
        w->pos = x, w->phase = W_PARAMS;
        return;
    }
    size_t fe = true_function_end(s, n, w->vstart);
    if (fe == (size_t)-1) fe = n;
    add_param(p, w->vstart, fe);
    w->pos = fe, w->phase = W_PARAMS;
}

static int walk(hy_chat_parser *p, int final, size_t *end) {
    walker *w = &p->w;
    const char *s = p->buf.p;
    size_t n = p->buf.len;
    for (;;) {
        if (p->oom) return WR_BAD;
        if (w->phase != W_VALUE)
            while (w->pos < n && is_ws(s[w->pos])) w->pos++;
        switch (w->phase) {
        case W_OPEN: {
            int m = match_at(s, n, w->pos, "<function=");
            if (m != M_FULL) return m == M_PARTIAL && !final ? WR_MORE : WR_BAD;
            size_t q = w->pos + 10;
            for (; q < n && s[q] != '>'; q++)
                if (strchr("{}<\"' \t\n\r", s[q]) || q - (w->pos + 10) >= MAX_NAME) return WR_BAD;
            if (q == n) return final ? WR_BAD : WR_MORE;
            if (q == w->pos + 10) return WR_BAD;
            w->name_b = w->pos + 10, w->name_e = q;
            if (p->bare && json_array_size(p->o.tools) && !find_tool(p->o.tools, s + w->name_b, q - w->name_b))
                return WR_BAD;
            w->props = find_props(p->o.tools, s + w->name_b, q - w->name_b);
            w->pos = q + 1, w->phase = W_PARAMS;
            break;
        }
        case W_PARAMS: {
            if (w->pos == n) return final ? (*end = n, WR_END) : WR_MORE;
            int mf = match_at(s, n, w->pos, "</function>"), mp = match_at(s, n, w->pos, "<parameter=");
            if (mf == M_FULL) {
                w->pos += 11, w->phase = W_AFTER;
                break;
            }
            if (mp == M_FULL) {
                size_t nb = w->pos + 11;
                const char *gt = memchr(s + nb, '>', n - nb);
                if (!gt && n - nb <= MAX_NAME) return final ? (*end = n, WR_END) : WR_MORE;
                if (!gt || (size_t)(gt - (s + nb)) > MAX_NAME) { /* not a parameter tag: skip it */
                    w->pos = nb;
                    break;
                }
                size_t q = (size_t)(gt - s) + 1;
                if (q == n && !final) return WR_MORE;
                if (q < n && s[q] == '\n') q++;
                w->pname_b = nb, w->pname_e = (size_t)(gt - s);
                w->vstart = w->vscan = q, w->depth = 0, w->phase = W_VALUE;
                break;
            }
            if (mf == M_PARTIAL || mp == M_PARTIAL) return final ? (*end = n, WR_END) : WR_MORE;
            /* stray text between parameters: go to the next structural tag. gscan remembers
             * how far the search got, so a long stray text is scanned once. */
            size_t from = w->gscan > w->pos ? w->gscan : w->pos;
            const char *a = memmem(s + from, n - from, "\n<parameter=", 12);
            const char *b = memmem(s + from, n - from, "</function>", 11);
            if (!a && !b) {
                if (final) return *end = n, WR_END;
                if (n > from + 12) w->gscan = n - 12;
                return WR_MORE;
            }
            w->pos = (a && (!b || a < b)) ? (size_t)(a - s) + 1 : (size_t)(b - s);
            w->gscan = 0;
            break;
        }
        case W_VALUE: {
            size_t q = w->vscan;
            for (;;) {
                const char *lt = q < n ? memchr(s + q, '<', n - q) : NULL;
                if (!lt) {
                    w->vscan = n;
                    if (!final) return WR_MORE;
                    value_fallback(p, s, n);
                    break;
                }
                q = (size_t)(lt - s);
                int mo = match_at(s, n, q, "<parameter="), mc = match_at(s, n, q, "</parameter>");
                if (mo == M_FULL && (q == w->vstart || s[q - 1] == '\n')) {
                    w->depth++, q += 11;
                    continue;
                }
                if (mc == M_FULL) {
                    if (w->depth > 0) {
                        w->depth--, q += 12;
                        continue;
                    }
                    size_t r = q + 12;
                    while (r < n && is_ws(s[r])) r++;
                    int st = r == n ? (final ? 1 : -1) : structural_after(w, s, n, r);
                    if (st < 0 && !final) {
                        w->vscan = q;
                        return WR_MORE;
                    }
                    if (st == 1) {
                        if (add_param(p, w->vstart, q)) return WR_BAD;
                        w->pos = q + 12, w->phase = W_PARAMS;
                        break;
                    }
                    q += 12;
                    continue;
                }
                if ((mo == M_PARTIAL || mc == M_PARTIAL) && !final) {
                    w->vscan = q;
                    return WR_MORE;
                }
                q++;
            }
            break;
        }
        case W_AFTER: {
            if (w->pos == n) return final ? (*end = n, WR_END) : WR_MORE;
            int m = match_at(s, n, w->pos, "</tool_call>");
            if (m == M_FULL) return *end = w->pos + 12, WR_END;
            if (m == M_PARTIAL) return final ? (*end = n, WR_END) : WR_MORE;
            return *end = w->pos, WR_END; /* missing </tool_call>: the rest is not this call */
        }
        }
    }
}

static void walker_reset(hy_chat_parser *p, size_t start) {
    walker *w = &p->w;
    param_span *ps = w->ps;
    size_t cap = w->cap;
    memset(w, 0, sizeof *w);
    w->ps = ps, w->cap = cap;
    w->pos = start;
    w->phase = W_OPEN;
}

/* Builds and emits the finished call held in buf[0..). */
static void emit_call(hy_chat_parser *p) {
    walker *w = &p->w;
    const char *s = p->buf.p;
    json_t *args = json_object();
    if (!args) {
        p->oom = 1;
        return;
    }
    for (size_t i = 0; i < w->nps; i++) {
        param_span *ps = &w->ps[i];
        size_t vb = ps->vb, ve = ps->ve;
        if (ve > vb && s[ve - 1] == '\n') ve--;
        json_t *v = convert_value(s + vb, ve - vb, s + ps->nb, ps->ne - ps->nb, w->props);
        hy_chat_buf key; /* JSON keys must be UTF-8 even when the model's bytes are not */
        hy_chat_buf_init(&key);
        hy_utf8_append_lossy(&key, s + ps->nb, ps->ne - ps->nb);
        int rc;
        if (!v || key.oom) {
            json_decref(v);
            rc = 1;
        } else {
            rc = json_object_setn_new(args, key.p ? key.p : "", key.len, v);
        }
        hy_chat_buf_free(&key);
        if (rc) {
            p->oom = 1;
            json_decref(args);
            return;
        }
    }
    hy_chat_buf a, nm;
    hy_chat_buf_init(&a);
    hy_chat_buf_init(&nm);
    hy_pyjson_dumps(&a, args);
    hy_utf8_append_lossy(&nm, s + w->name_b, w->name_e - w->name_b);
    if (a.oom || nm.oom) {
        p->oom = 1;
    } else {
        hy_chat_event ev = {.kind = HY_CHAT_EV_TOOL_CALL, .tool_index = p->n_calls, .name = nm.p,
                            .arguments = a.p, .arguments_json = args};
        p->n_calls++;
        p->fn(p->user, &ev);
    }
    hy_chat_buf_free(&a);
    hy_chat_buf_free(&nm);
    json_decref(args);
}

/* "<tool_call>" WS "<function=" at pos 0 of s? */
static int tool_open(const char *s, size_t n) {
    int m = match_at(s, n, 0, "<tool_call>");
    if (m != M_FULL) return m;
    size_t i = 11;
    while (i < n && is_ws(s[i])) i++;
    return match_at(s, n, i, "<function=");
}

/* ---- states ------------------------------------------------------------------------- */

static void consume(hy_chat_parser *p, size_t k) { hy_chat_buf_consume(&p->buf, k); }

/* Returns 1 when progress was made, 0 when waiting for more text. */
static int step(hy_chat_parser *p, int final) {
    const char *s = p->buf.p;
    size_t n = p->buf.len;
    if (!n) return 0;
    switch (p->state) {
    case ST_START: {
        size_t i = 0;
        while (i < n && is_ws(s[i])) i++;
        consume(p, i);
        s = p->buf.p, n = p->buf.len;
        if (!n) return 0;
        int m = match_at(s, n, 0, "<think>");
        if (m == M_FULL) {
            consume(p, 7);
            p->state = ST_REASON;
            return 1;
        }
        if (m == M_PARTIAL && !final) return 0;
        p->state = p->o.thinking ? ST_REASON : ST_CONTENT;
        return 1;
    }
    case ST_REASON: {
        const char *lt = memchr(s, '<', n);
        size_t i = lt ? (size_t)(lt - s) : (final ? n : utf8_whole(s, n));
        if (!lt && !i) return 0; /* only part of a UTF-8 character so far */
        if (i) {
            emit_text(p, HY_CHAT_EV_REASONING, s, i);
            consume(p, i);
            return 1;
        }
        int mt = match_at(s, n, 0, "</think>");
        int mc = p->o.parse_tool_calls ? tool_open(s, n) : M_NO;
        if (mt == M_FULL || mc == M_FULL) {
            hy_chat_buf_truncate(&p->pend, 0);
            if (mt == M_FULL) consume(p, 8);
            else p->implicit_end = 1;
            p->state = ST_CONTENT;
            p->line_start = 1;
            return 1;
        }
        if ((mt == M_PARTIAL || mc == M_PARTIAL) && !final) return 0;
        emit_text(p, HY_CHAT_EV_REASONING, s, 1);
        consume(p, 1);
        return 1;
    }
    case ST_CONTENT: {
        const char *lt = memchr(s, '<', n);
        size_t i = lt ? (size_t)(lt - s) : (final ? n : utf8_whole(s, n));
        if (!lt && !i) return 0; /* only part of a UTF-8 character so far */
        if (i) {
            emit_text(p, HY_CHAT_EV_CONTENT, s, i);
            consume(p, i);
            return 1;
        }
        if (p->implicit_end) {
            int m = match_at(s, n, 0, "</think>");
            if (m == M_FULL) {
                consume(p, 8);
                p->implicit_end = 0;
                return 1;
            }
            if (m == M_PARTIAL && !final) return 0;
        }
        if (p->o.parse_tool_calls) {
            int mc = tool_open(s, n);
            int mb = p->line_start ? match_at(s, n, 0, "<function=") : M_NO;
            if (mc == M_FULL || mb == M_FULL) {
                p->bare = mc != M_FULL;
                walker_reset(p, p->bare ? 0 : 11);
                p->state = ST_TOOL;
                return 1;
            }
            if ((mc == M_PARTIAL || mb == M_PARTIAL) && !final) return 0;
        }
        emit_text(p, HY_CHAT_EV_CONTENT, s, 1);
        consume(p, 1);
        return 1;
    }
    case ST_TOOL: {
        size_t end = 0;
        int r = walk(p, final, &end);
        if (r == WR_MORE) return 0;
        if (r == WR_BAD) { /* not a call after all: its first byte is text */
            if (p->oom) return 0;
            p->state = ST_CONTENT;
            emit_text(p, HY_CHAT_EV_CONTENT, p->buf.p, 1);
            consume(p, 1);
            return 1;
        }
        hy_chat_buf_truncate(&p->pend, 0); /* content whitespace before a call is dropped */
        emit_call(p);
        consume(p, end);
        p->state = ST_CONTENT;
        p->line_start = 1;
        return 1;
    }
    }
    return 0;
}

static int process(hy_chat_parser *p, int final) {
    while (!p->oom && step(p, final)) {
    }
    if (p->oom || p->buf.oom || p->pend.oom || p->scratch.oom) return HY_E_NOMEM;
    return 0;
}

/* ---- public API --------------------------------------------------------------------- */

int hy_chat_parser_create(const hy_chat_parse_opts *opts, hy_chat_event_fn fn, void *user, hy_chat_parser **out,
                          hy_err *err) {
    *out = NULL;
    if (!fn) return hy_err_set(err, HY_E_INVALID, "chat parser: no event callback");
    if (opts && opts->tools && !json_is_array(opts->tools) && !json_is_null(opts->tools))
        return hy_err_set(err, HY_E_INVALID, "chat parser: tools must be an array");
    hy_chat_parser *p = calloc(1, sizeof *p);
    if (!p) return hy_err_set(err, HY_E_NOMEM, "chat parser: out of memory");
    if (opts) p->o = *opts;
    if (json_is_null(p->o.tools)) p->o.tools = NULL;
    p->fn = fn;
    p->user = user;
    p->state = ST_START;
    p->line_start = 1;
    hy_chat_buf_init(&p->buf);
    hy_chat_buf_init(&p->pend);
    hy_chat_buf_init(&p->scratch);
    *out = p;
    return 0;
}

int hy_chat_parser_feed(hy_chat_parser *p, const char *text, size_t len) {
    if (p->finished) return HY_E_STATE;
    if (hy_chat_buf_put(&p->buf, text, len)) return HY_E_NOMEM;
    return process(p, 0);
}

int hy_chat_parser_finish(hy_chat_parser *p, hy_chat_parse_summary *s) {
    if (p->finished) return HY_E_STATE;
    p->finished = 1;
    int rc = process(p, 1);
    hy_chat_buf_truncate(&p->pend, 0);
    if (s) {
        s->n_tool_calls = p->n_calls;
        s->tool_calls = p->n_calls > 0;
        s->reasoning_len = p->reasoning_len;
        s->content_len = p->content_len;
    }
    return rc;
}

void hy_chat_parser_free(hy_chat_parser *p) {
    if (!p) return;
    hy_chat_buf_free(&p->buf);
    hy_chat_buf_free(&p->pend);
    hy_chat_buf_free(&p->scratch);
    free(p->w.ps);
    free(p);
}

static int append_str(char **dst, size_t *dl, const char *s, size_t n) {
    char *d = realloc(*dst, *dl + n + 1);
    if (!d) return -1;
    memcpy(d + *dl, s, n);
    *dl += n;
    d[*dl] = 0;
    *dst = d;
    return 0;
}

void hy_chat_parse_collect(void *result, const hy_chat_event *ev) {
    hy_chat_parse_result *r = result;
    switch (ev->kind) {
    case HY_CHAT_EV_REASONING:
        if (append_str(&r->reasoning, &r->reasoning_len, ev->text, ev->len)) r->oom = 1;
        break;
    case HY_CHAT_EV_CONTENT:
        if (append_str(&r->content, &r->content_len, ev->text, ev->len)) r->oom = 1;
        break;
    case HY_CHAT_EV_TOOL_CALL:
        if (!r->tool_calls && !(r->tool_calls = json_array())) {
            r->oom = 1;
            break;
        }
        json_t *call = json_object();
        if (!call || json_object_set_new(call, "name", hy_pyjson_string_lossy(ev->name, strlen(ev->name))) ||
            json_object_set_new(call, "arguments", hy_pyjson_string_lossy(ev->arguments, strlen(ev->arguments))) ||
            json_array_append_new(r->tool_calls, call))
            r->oom = 1;
        break;
    }
}

void hy_chat_parse_result_free(hy_chat_parse_result *r) {
    if (!r) return;
    free(r->reasoning);
    free(r->content);
    json_decref(r->tool_calls);
    memset(r, 0, sizeof *r);
}

int hy_chat_parse_text(const char *text, size_t len, const hy_chat_parse_opts *opts, hy_chat_parse_result *out,
                       hy_err *err) {
    memset(out, 0, sizeof *out);
    hy_chat_parser *p;
    int rc = hy_chat_parser_create(opts, hy_chat_parse_collect, out, &p, err);
    if (rc) return rc;
    rc = hy_chat_parser_feed(p, text, len);
    if (!rc) rc = hy_chat_parser_finish(p, NULL);
    hy_chat_parser_free(p);
    if (!rc && !out->tool_calls && !(out->tool_calls = json_array())) rc = HY_E_NOMEM;
    if (!rc && out->oom) rc = HY_E_NOMEM;
    if (rc) {
        hy_chat_parse_result_free(out);
        return hy_err_set(err, rc, "chat parse: %s", rc == HY_E_NOMEM ? "out of memory" : "failed");
    }
    return 0;
}
