#!/usr/bin/env python3
"""Writes the io fuzz seed corpora and the malformed-file collection.

  tests/fuzz/corpus/config/        valid config.json variants (seeds)
  tests/fuzz/corpus/safetensors/   small valid safetensors files (seeds)
  tests/data/malformed/config/     one broken config.json per failure mode
  tests/data/malformed/safetensors/ one broken safetensors file per failure mode

`tiny.json` + `tiny.safetensors` form a complete, consistent checkpoint (a
2-layer qwen3_5: one Gated DeltaNet + one attention layer, BF16) that
tests/cli/test_inspect.sh pairs with each malformed file. Standard library
only; deterministic; run from the repository root:  python3 tools/make_io_fixtures.py
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_CFG = os.path.join(ROOT, "tests/fuzz/corpus/config")
CORPUS_ST = os.path.join(ROOT, "tests/fuzz/corpus/safetensors")
BAD_CFG = os.path.join(ROOT, "tests/data/malformed/config")
BAD_ST = os.path.join(ROOT, "tests/data/malformed/safetensors")

# tiny dims
V, D, F, HQ, HKV, DH, HK, HV, DK, DV, K = 16, 8, 8, 2, 1, 4, 1, 2, 4, 4, 2
CONV = 2 * HK * DK + HV * DV
SIZES = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "U8": 1, "I64": 8, "F64": 8}


def tiny_config():
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen3_5_text", "vocab_size": V, "hidden_size": D, "intermediate_size": F,
            "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"],
            "num_attention_heads": HQ, "num_key_value_heads": HKV, "head_dim": DH,
            "linear_num_key_heads": HK, "linear_num_value_heads": HV, "linear_key_head_dim": DK,
            "linear_value_head_dim": DV, "linear_conv_kernel_dim": K, "rms_norm_eps": 1e-6,
            "mtp_num_hidden_layers": 0, "eos_token_id": 1, "bos_token_id": None,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.5,
                                "mrope_section": [1, 0, 0], "mrope_interleaved": True},
        },
        "vision_config": {"depth": 1},
    }


def tiny_tensors():
    p = "model.language_model."
    t = [(p + "embed_tokens.weight", [V, D]), (p + "norm.weight", [D]), ("lm_head.weight", [V, D])]
    for i, attn in ((0, False), (1, True)):
        q = f"{p}layers.{i}."
        t += [(q + "input_layernorm.weight", [D]), (q + "post_attention_layernorm.weight", [D])]
        if attn:
            t += [(q + "self_attn.q_proj.weight", [2 * HQ * DH, D]), (q + "self_attn.k_proj.weight", [HKV * DH, D]),
                  (q + "self_attn.v_proj.weight", [HKV * DH, D]), (q + "self_attn.o_proj.weight", [D, HQ * DH]),
                  (q + "self_attn.q_norm.weight", [DH]), (q + "self_attn.k_norm.weight", [DH])]
        else:
            t += [(q + "linear_attn.in_proj_qkv.weight", [CONV, D]), (q + "linear_attn.in_proj_z.weight", [HV * DV, D]),
                  (q + "linear_attn.in_proj_b.weight", [HV, D]), (q + "linear_attn.in_proj_a.weight", [HV, D]),
                  (q + "linear_attn.conv1d.weight", [CONV, 1, K]), (q + "linear_attn.A_log", [HV]),
                  (q + "linear_attn.dt_bias", [HV]), (q + "linear_attn.norm.weight", [DV]),
                  (q + "linear_attn.out_proj.weight", [D, HV * DV])]
        t += [(q + "mlp.gate_proj.weight", [F, D]), (q + "mlp.up_proj.weight", [F, D]),
              (q + "mlp.down_proj.weight", [D, F])]
    return [(n, "BF16", s) for n, s in t]


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape). Data: a byte pattern."""
    header, off, blobs = {}, 0, []
    for i, (name, dt, shape) in enumerate(tensors):
        nb = numel(shape) * SIZES[dt]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        blobs.append(bytes(((i * 31 + j) % 251) for j in range(nb)))
        off += nb
    if metadata is not None:
        header["__metadata__"] = metadata
    return raw_file(json.dumps(header, separators=(",", ":"), sort_keys=True), b"".join(blobs))


def raw_file(header_text, data=b"", pad=True, length=None):
    h = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(d, name), mode) as f:
        f.write(data)


def jdump(o):
    return json.dumps(o, indent=2) + "\n"


def main():
    cfg = tiny_config()
    # ---- config seeds
    write(CORPUS_CFG, "tiny.json", jdump(cfg))
    with open(os.path.join(ROOT, "tests/data/configs/qwen3.6-27b/config.json")) as f:
        write(CORPUS_CFG, "qwen3.6-27b.json", f.read())
    flat = dict(cfg["text_config"])
    flat.update({"model_type": "qwen3_5_text", "tie_word_embeddings": True, "rope_theta": 1000000,
                 "partial_rotary_factor": 0.5, "architectures": ["Qwen3_5ForCausalLM"]})
    del flat["rope_parameters"]
    del flat["layer_types"]
    flat["full_attention_interval"] = 2
    write(CORPUS_CFG, "flat-legacy-rope.json", jdump(flat))
    fp8 = json.loads(json.dumps(cfg))
    fp8["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                  "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}
    fp8["text_config"]["eos_token_id"] = [1, 2]
    fp8["text_config"]["rope_scaling"] = {"type": "default", "mrope_section": [11, 11, 10]}
    write(CORPUS_CFG, "fp8-legacy-scaling.json", jdump(fp8))
    write(CORPUS_CFG, "defaults.json", '{"model_type": "qwen3_5_text"}\n')

    # ---- safetensors seeds
    tt = tiny_tensors()
    write(CORPUS_ST, "tiny.safetensors", safetensors(tt, {"format": "pt"}))
    write(CORPUS_ST, "empty-header.safetensors", raw_file("{}"))
    write(CORPUS_ST, "mixed.safetensors",
          safetensors([("a", "F32", [2, 3]), ("b", "F8_E4M3", [4]), ("b_scale_inv", "F32", [1, 1]),
                       ("zero", "U8", [0, 5]), ("scalar", "I64", [])], {"k": "v"}))

    # ---- malformed configs
    good = jdump(cfg)
    write(BAD_CFG, "empty.json", "")
    write(BAD_CFG, "truncated.json", good[: len(good) // 2])
    write(BAD_CFG, "nan.json", good.replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": NaN'))
    write(BAD_CFG, "deep_nesting.json", '{"model_type": "qwen3_5", "x": ' + "[" * 100000)
    write(BAD_CFG, "array_root.json", "[" + good + "]")
    write(BAD_CFG, "duplicate_keys.json", good.replace('"model_type": "qwen3_5",', '"model_type": "qwen3_5", "model_type": "qwen3_5",'))
    write(BAD_CFG, "invalid_utf8.json", good.encode().replace(b'"silu"', b'"sil\xff"').replace(b'"vision_config"', b'"vision_\xc3\x28config"'))
    write(BAD_CFG, "nul_in_string.json", good.replace('"qwen3_5_text"', '"qwen3_5\\u0000text"'))
    write(BAD_CFG, "trailing_garbage.json", good + "}")
    write(BAD_CFG, "huge_integer.json", good.replace(f'"hidden_size": {D}', '"hidden_size": 99999999999999999999999'))

    def variant(name, edit):
        c = json.loads(json.dumps(cfg))
        edit(c)
        write(BAD_CFG, name, jdump(c))

    variant("unknown_model_type.json", lambda c: c.update(model_type="qwen3_next"))
    variant("missing_model_type.json", lambda c: c.pop("model_type"))
    variant("value_heads_not_multiple.json", lambda c: c["text_config"].update(linear_num_value_heads=3, linear_num_key_heads=2))
    variant("heads_not_multiple.json", lambda c: c["text_config"].update(num_attention_heads=3, num_key_value_heads=2))
    variant("layer_types_length.json", lambda c: c["text_config"].update(layer_types=["full_attention"]))
    variant("layer_types_unknown.json", lambda c: c["text_config"].update(layer_types=["linear_attention", "moe"]))
    variant("negative_hidden_size.json", lambda c: c["text_config"].update(hidden_size=-8))
    variant("zero_layers.json", lambda c: c["text_config"].update(num_hidden_layers=0))
    variant("wrong_type.json", lambda c: c["text_config"].update(intermediate_size="8"))
    variant("float_for_int.json", lambda c: c["text_config"].update(head_dim=4.0))
    variant("partial_rotary_zero.json", lambda c: c["text_config"]["rope_parameters"].update(partial_rotary_factor=0))
    variant("partial_rotary_odd.json", lambda c: c["text_config"]["rope_parameters"].update(partial_rotary_factor=0.25))
    variant("rope_yarn.json", lambda c: c["text_config"]["rope_parameters"].update(rope_type="yarn"))
    variant("huge_sizes.json", lambda c: c["text_config"].update(hidden_size=10**15))
    variant("text_config_not_object.json", lambda c: c.update(text_config=[1]))
    variant("bool_as_string.json", lambda c: c.update(tie_word_embeddings="false"))
    variant("eos_bad_list.json", lambda c: c["text_config"].update(eos_token_id=[1, None]))
    variant("quant_unsupported.json", lambda c: c.update(quantization_config={"quant_method": "gptq", "bits": 4}))

    # ---- malformed safetensors
    good_st = safetensors(tt)
    hdr = {n: {"dtype": d, "shape": s, "data_offsets": [0, 0]} for n, d, s in tt[:0]}

    def one(entry, data_len):
        return raw_file(json.dumps({"t": entry}), bytes(data_len))

    write(BAD_ST, "empty.safetensors", b"")
    write(BAD_ST, "truncated_length.safetensors", good_st[:5])
    write(BAD_ST, "truncated_data.safetensors", good_st[: len(good_st) - 100])
    write(BAD_ST, "truncated_header.safetensors", good_st[:200])
    write(BAD_ST, "huge_header_length.safetensors", struct.pack("<Q", 1 << 40) + b"{}")
    write(BAD_ST, "header_length_past_eof.safetensors", raw_file("{}", pad=False, length=4096))
    write(BAD_ST, "header_length_zero.safetensors", raw_file("{}", pad=False, length=0))
    write(BAD_ST, "offsets_past_eof.safetensors", one({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, 8))
    write(BAD_ST, "overlapping.safetensors", raw_file(json.dumps({
        "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}), bytes(24)))
    write(BAD_ST, "wrong_dtype_size.safetensors", one({"dtype": "BF16", "shape": [4], "data_offsets": [0, 16]}, 16))
    write(BAD_ST, "unknown_dtype.safetensors", one({"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}, 2))
    write(BAD_ST, "negative_shape.safetensors", one({"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}, 16))
    write(BAD_ST, "end_before_begin.safetensors", one({"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}, 8))
    write(BAD_ST, "too_many_dims.safetensors", one({"dtype": "U8", "shape": [1] * 9, "data_offsets": [0, 1]}, 1))
    write(BAD_ST, "shape_overflow.safetensors", one({"dtype": "F32", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 0]}, 0))
    write(BAD_ST, "offsets_not_ints.safetensors", one({"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]}, 4))
    write(BAD_ST, "entry_not_object.safetensors", raw_file('{"t": [1, 2]}'))
    write(BAD_ST, "metadata_not_string.safetensors", raw_file('{"__metadata__": {"total": 5}}'))
    write(BAD_ST, "nan.safetensors", raw_file('{"t": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}', bytes(4)))
    write(BAD_ST, "deep_nesting.safetensors", raw_file("[" * 100000))
    write(BAD_ST, "non_object_root.safetensors", raw_file("[]"))
    write(BAD_ST, "duplicate_keys.safetensors", raw_file(
        '{"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}', bytes(1)))
    write(BAD_ST, "invalid_utf8.safetensors", raw_file(b'{"t\xff": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}', bytes(1)))
    write(BAD_ST, "nul_padding.safetensors", raw_file(b"{}" + b"\0" * 6, pad=False))
    # syntactically valid files whose tensors do not form a qwen3_5 checkpoint
    write(BAD_ST, "missing_tensor.safetensors", safetensors([t for t in tt if "in_proj_z" not in t[0]]))
    write(BAD_ST, "misshaped_tensor.safetensors",
          safetensors([(n, d, [s[1], s[0]] if n.endswith("in_proj_qkv.weight") else s) for n, d, s in tt]))
    write(BAD_ST, "bad_weight_dtype.safetensors",
          safetensors([(n, "I64" if n.endswith("A_log") else d, s) for n, d, s in tt]))
    write(BAD_ST, "unexpected_tensor.safetensors", safetensors(tt + [("model.language_model.layers.0.bogus", "BF16", [2])]))


if __name__ == "__main__":
    main()
