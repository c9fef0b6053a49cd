/*
 * The `hyla logits` and `hyla run` subcommands, driven as a user would (fork +
 * exec of $HYLA_BIN):
 *  - logits of a fixture prompt match the golden file; --threads 1 and 2 write
 *    bit-identical files; --all writes every position;
 *  - `run` reproduces every recorded greedy continuation;
 *  - usage errors exit 2, runtime errors exit 1;
 *  - memory: on a generated ~120 MB BF16 checkpoint, the peak RSS of `hyla run`
 *    stays below file size + context scratch + sequence state + a small slack,
 *    i.e. the BF16 matrices are used in place from the mapping, never copied
 *    to fp32 (a copy would add ~2x the file size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/fp.h"
#include "model/forward.h"
#include "test_util.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct cmd_result {
    int code;          /* exit status, or -1 if it did not exit normally */
    char out[65536];   /* stdout (truncated) */
    char err[8192];    /* stderr (truncated) */
    long maxrss_kb;
} cmd_result;

static void read_all(int fd, char *buf, size_t cap) {
    size_t n = 0;
    ssize_t k;
    while ((k = read(fd, buf + n, cap - 1 - n)) > 0) {
        n += (size_t)k;
        if (n + 1 >= cap) {
            char sink[4096];
            while (read(fd, sink, sizeof sink) > 0) {
            }
            break;
        }
    }
    buf[n] = 0;
}

/* Runs $HYLA_BIN with argv (argv[0] ignored); stderr captured after stdout is drained. */
static void run_hyla(char **argv, cmd_result *r) {
    const char *bin = getenv("HYLA_BIN");
    assert_non_null(bin);
    int po[2], pe[2];
    assert_int_equal(pipe(po), 0);
    assert_int_equal(pipe(pe), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        argv[0] = (char *)bin;
        execv(bin, argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    read_all(po[0], r->out, sizeof r->out);
    read_all(pe[0], r->err, sizeof r->err);
    close(po[0]);
    close(pe[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->maxrss_kb = ru.ru_maxrss;
}

static char *ids_csv(json_t *arr) {
    size_t n = json_array_size(arr);
    char *s = malloc(n * 12 + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(s + o, i ? ",%lld" : "%lld", (long long)json_integer_value(json_array_get(arr, i)));
    s[o] = 0;
    return s;
}

static json_t *load_manifest(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "golden/%.64s/manifest.json", name);
    char *p = hy_test_data_path(rel);
    json_t *m = json_load_file(p, 0, NULL);
    free(p);
    assert_non_null(m);
    return m;
}

static json_t *find_prompt(json_t *man, const char *pname) {
    json_t *prompts = json_object_get(man, "prompts");
    for (size_t i = 0; i < json_array_size(prompts); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(prompts, i), "name")), pname))
            return json_array_get(prompts, i);
    fail_msg("prompt %s not in manifest", pname);
    return NULL;
}

static void test_logits_cmd(void **st) {
    (void)st;
    const char *name = "tiny-text";
    json_t *man = load_manifest(name);
    char *model = hy_test_data_path("models/tiny-text");
    char tmpl[] = "/tmp/hyla_cli_XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char f1[512], f2[512], f3[512];
    snprintf(f1, sizeof f1, "%s/t1.f32", tmpl);
    snprintf(f2, sizeof f2, "%s/t2.f32", tmpl);
    snprintf(f3, sizeof f3, "%s/all.f32", tmpl);
    static cmd_result r;

    struct { const char *prompt; bool all; const char *file; const char *threads; } runs[] = {
        {"len63", false, f1, "1"}, {"len63", false, f2, "2"}, {"len65", true, f3, "2"}};
    for (size_t k = 0; k < 3; k++) {
        json_t *p = find_prompt(man, runs[k].prompt);
        char *ids = ids_csv(json_object_get(p, "ids"));
        char *argv[] = {"hyla", "logits", "-m", model, "--ids", ids, "--out", (char *)runs[k].file,
                        "--threads", (char *)runs[k].threads, runs[k].all ? "--all" : NULL, NULL};
        run_hyla(argv, &r);
        printf("hyla logits %s --threads %s%s: %s", runs[k].prompt, runs[k].threads, runs[k].all ? " --all" : "",
               r.out);
        if (r.code) printf("stderr: %s\n", r.err);
        assert_int_equal(r.code, 0);
        assert_non_null(strstr(r.out, "argmax "));
        size_t len = 0, glen = 0;
        float *got = (float *)hy_test_read_file(runs[k].file, &len);
        char rel[256];
        snprintf(rel, sizeof rel, "golden/%s/%s", name, json_string_value(json_object_get(p, "logits")));
        char *gp = hy_test_data_path(rel);
        float *want = (float *)hy_test_read_file(gp, &glen);
        assert_non_null(got);
        assert_non_null(want);
        assert_int_equal(len, glen);
        double e = hy_test_max_abs_diff(got, want, len / 4);
        printf("  file %zu floats, vs HF max|d| = %.3g\n", len / 4, e);
        assert_true(e <= 1e-3); /* tiny-text: HF fp32 itself is up to 2.75e-4 from exact */
        free(got); free(want); free(gp); free(ids);
    }
    size_t l1, l2;
    unsigned char *a = hy_test_read_file(f1, &l1), *b = hy_test_read_file(f2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(a, b, l1);
    printf("--threads 1 vs --threads 2: files bit-identical\n");
    free(a); free(b);
    unlink(f1); unlink(f2); unlink(f3);
    rmdir(tmpl);

    /* usage and runtime errors */
    char *bad1[] = {"hyla", "logits", "-m", model, NULL};
    run_hyla(bad1, &r);
    assert_int_equal(r.code, 2);
    char *bad2[] = {"hyla", "logits", "-m", model, "--ids", "1,x", NULL};
    run_hyla(bad2, &r);
    assert_int_equal(r.code, 2);
    char *bad3[] = {"hyla", "logits", "-m", model, "--ids", "1,512", NULL};
    run_hyla(bad3, &r);
    assert_int_equal(r.code, 1);
    printf("out-of-vocab id: %s", r.err);
    char *bad4[] = {"hyla", "run", "-m", "/nonexistent-dir", "--ids", "1", "-n", "2", NULL};
    run_hyla(bad4, &r);
    assert_int_equal(r.code, 1);
    printf("missing model: %s", r.err);
    char *bad5[] = {"hyla", "run", "-m", model, "--ids", "1", "-n", "-3", NULL};
    run_hyla(bad5, &r);
    assert_int_equal(r.code, 2);
    free(model);
    json_decref(man);
}

static void test_run_greedy(void **st) {
    (void)st;
    const char *names[] = {"tiny-text", "tiny-text-bf16"};
    static cmd_result r;
    for (int mi = 0; mi < 2; mi++) {
        json_t *man = load_manifest(names[mi]);
        char rel[256];
        snprintf(rel, sizeof rel, "models/%s", names[mi]);
        char *model = hy_test_data_path(rel);
        json_t *greedy = json_object_get(man, "greedy");
        for (size_t gi = 0; gi < json_array_size(greedy); gi++) {
            json_t *g = json_array_get(greedy, gi);
            json_t *p = find_prompt(man, json_string_value(json_object_get(g, "prompt")));
            char *ids = ids_csv(json_object_get(p, "ids"));
            char *want = ids_csv(json_object_get(g, "tokens"));
            char nbuf[16];
            snprintf(nbuf, sizeof nbuf, "%zu", json_array_size(json_object_get(g, "tokens")));
            char *argv[] = {"hyla", "run", "-m", model, "--ids", ids, "-n", nbuf, "--threads", "2", NULL};
            run_hyla(argv, &r);
            if (r.code) printf("stderr: %s\n", r.err);
            assert_int_equal(r.code, 0);
            char *nl = strchr(r.out, '\n');
            if (nl) *nl = 0;
            bool ok = !strcmp(r.out, want);
            printf("hyla run %-15s after %-7s: %s\n", names[mi],
                   json_string_value(json_object_get(g, "prompt")), ok ? "matches HF greedy" : r.out);
            assert_true(ok);
            free(ids);
            free(want);
        }
        free(model);
        json_decref(man);
    }
}

/* ----------------------------------------------------------------- memory */

typedef struct st_writer {
    FILE *f;
    json_t *hdr;
    size_t off;
    uint64_t rng;
    int pass; /* 0: collect header, 1: write data */
} st_writer;

static void st_tensor(st_writer *w, const char *name, const char *dtype, int ndim, const int64_t *shape, float scale,
                      float center) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    size_t es = !strcmp(dtype, "F32") ? 4 : 2, bytes = n * es;
    if (w->pass == 0) {
        json_t *o = json_object(), *sh = json_array(), *offs = json_array();
        for (int i = 0; i < ndim; i++) json_array_append_new(sh, json_integer(shape[i]));
        json_array_append_new(offs, json_integer((json_int_t)w->off));
        json_array_append_new(offs, json_integer((json_int_t)(w->off + bytes)));
        json_object_set_new(o, "dtype", json_string(dtype));
        json_object_set_new(o, "shape", sh);
        json_object_set_new(o, "data_offsets", offs);
        json_object_set_new(w->hdr, name, o);
    } else {
        static unsigned char buf[1 << 16];
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            w->rng ^= w->rng << 13; w->rng ^= w->rng >> 7; w->rng ^= w->rng << 17;
            float v = center + scale * ((float)(w->rng >> 40) / 8388608.0f - 1.0f);
            if (es == 4) {
                memcpy(buf + k, &v, 4);
                k += 4;
            } else {
                uint16_t h = hy_f32_to_bf16(v);
                buf[k++] = (unsigned char)h;
                buf[k++] = (unsigned char)(h >> 8);
            }
            if (k + 4 > sizeof buf || i + 1 == n) {
                assert_int_equal(fwrite(buf, 1, k, w->f), k);
                k = 0;
            }
        }
    }
    w->off += bytes;
}

enum { G_V = 8192, G_D = 1024, G_F = 3072, G_L = 4, G_HQ = 8, G_HKV = 2, G_DH = 128, G_HK = 4, G_HV = 8, G_DK = 128,
       G_K = 4 };

static void st_all(st_writer *w) {
    const int conv = 2 * G_HK * G_DK + G_HV * G_DK;
    char nm[256];
    int64_t s[3];
#define T2(name_fmt, a, b, dt, sc, ce) \
    (s[0] = (a), s[1] = (b), st_tensor(w, name_fmt, dt, 2, s, sc, ce))
#define T1(name_fmt, a, dt, sc, ce) (s[0] = (a), st_tensor(w, name_fmt, dt, 1, s, sc, ce))
    T2("model.embed_tokens.weight", G_V, G_D, "BF16", 1.0f, 0.0f);
    T1("model.norm.weight", G_D, "BF16", 0.1f, 0.0f);
    for (int l = 0; l < G_L; l++) {
        const float ms = 0.03f;
#define N(suffix) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), nm)
        T1(N("input_layernorm.weight"), G_D, "BF16", 0.1f, 0.0f);
        T1(N("post_attention_layernorm.weight"), G_D, "BF16", 0.1f, 0.0f);
        T2(N("mlp.gate_proj.weight"), G_F, G_D, "BF16", ms, 0.0f);
        T2(N("mlp.up_proj.weight"), G_F, G_D, "BF16", ms, 0.0f);
        T2(N("mlp.down_proj.weight"), G_D, G_F, "BF16", ms, 0.0f);
        if (l == G_L - 1) {
            T2(N("self_attn.q_proj.weight"), 2 * G_HQ * G_DH, G_D, "BF16", ms, 0.0f);
            T2(N("self_attn.k_proj.weight"), G_HKV * G_DH, G_D, "BF16", ms, 0.0f);
            T2(N("self_attn.v_proj.weight"), G_HKV * G_DH, G_D, "BF16", ms, 0.0f);
            T2(N("self_attn.o_proj.weight"), G_D, G_HQ * G_DH, "BF16", ms, 0.0f);
            T1(N("self_attn.q_norm.weight"), G_DH, "BF16", 0.1f, 0.0f);
            T1(N("self_attn.k_norm.weight"), G_DH, "BF16", 0.1f, 0.0f);
        } else {
            T2(N("linear_attn.in_proj_qkv.weight"), conv, G_D, "BF16", ms, 0.0f);
            T2(N("linear_attn.in_proj_z.weight"), G_HV * G_DK, G_D, "BF16", ms, 0.0f);
            T2(N("linear_attn.in_proj_b.weight"), G_HV, G_D, "BF16", ms, 0.0f);
            T2(N("linear_attn.in_proj_a.weight"), G_HV, G_D, "BF16", ms, 0.0f);
            s[0] = conv, s[1] = 1, s[2] = G_K;
            st_tensor(w, N("linear_attn.conv1d.weight"), "BF16", 3, s, 0.3f, 0.0f);
            T1(N("linear_attn.A_log"), G_HV, "F32", 0.5f, 0.0f);
            T1(N("linear_attn.dt_bias"), G_HV, "BF16", 0.5f, 0.0f);
            T1(N("linear_attn.norm.weight"), G_DK, "F32", 0.1f, 1.0f);
            T2(N("linear_attn.out_proj.weight"), G_D, G_HV * G_DK, "BF16", ms, 0.0f);
        }
#undef N
    }
#undef T1
#undef T2
}

static size_t write_checkpoint(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "model_type", json_string("qwen3_5_text"));
    json_t *arch = json_array();
    json_array_append_new(arch, json_string("Qwen3_5ForCausalLM"));
    json_object_set_new(cfg, "architectures", arch);
    json_object_set_new(cfg, "vocab_size", json_integer(G_V));
    json_object_set_new(cfg, "hidden_size", json_integer(G_D));
    json_object_set_new(cfg, "intermediate_size", json_integer(G_F));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(G_L));
    json_object_set_new(cfg, "full_attention_interval", json_integer(4));
    json_object_set_new(cfg, "num_attention_heads", json_integer(G_HQ));
    json_object_set_new(cfg, "num_key_value_heads", json_integer(G_HKV));
    json_object_set_new(cfg, "head_dim", json_integer(G_DH));
    json_object_set_new(cfg, "linear_num_key_heads", json_integer(G_HK));
    json_object_set_new(cfg, "linear_num_value_heads", json_integer(G_HV));
    json_object_set_new(cfg, "linear_key_head_dim", json_integer(G_DK));
    json_object_set_new(cfg, "linear_value_head_dim", json_integer(G_DK));
    json_object_set_new(cfg, "linear_conv_kernel_dim", json_integer(G_K));
    json_object_set_new(cfg, "rms_norm_eps", json_real(1e-6));
    json_object_set_new(cfg, "rope_theta", json_real(1e7));
    json_object_set_new(cfg, "partial_rotary_factor", json_real(0.25));
    json_object_set_new(cfg, "tie_word_embeddings", json_true());
    json_object_set_new(cfg, "eos_token_id", json_integer(G_V - 1));
    json_object_set_new(cfg, "dtype", json_string("bfloat16"));
    assert_int_equal(json_dump_file(cfg, path, JSON_INDENT(2)), 0);
    json_decref(cfg);

    st_writer w = {.hdr = json_object(), .rng = 0x9E3779B97F4A7C15ull};
    st_all(&w); /* pass 0: header */
    json_t *meta = json_object();
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(w.hdr, "__metadata__", meta);
    char *hdr = json_dumps(w.hdr, JSON_COMPACT);
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    w.f = fopen(path, "wb");
    assert_non_null(w.f);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    fwrite(len8, 1, 8, w.f);
    fwrite(hdr, 1, hl, w.f);
    for (size_t i = hl; i < padded; i++) fputc(' ', w.f);
    size_t total = 8 + padded + w.off;
    w.pass = 1;
    w.off = 0;
    st_all(&w);
    assert_int_equal(fclose(w.f), 0);
    free(hdr);
    json_decref(w.hdr);
    return total;
}

static void rm_checkpoint(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

static void test_run_memory(void **st) {
    (void)st;
    char dir[] = "/tmp/hyla_mem_XXXXXX";
    assert_non_null(mkdtemp(dir));
    size_t file = write_checkpoint(dir);
    const char *ids = "5,17,300,4000,8000,42";
    const int n_prompt = 6, n_gen = 3;

    /* what the context and the sequence need, computed in-process with the same options */
    hy_model *m = NULL;
    hy_err err;
    int rc = hy_model_load(&m, dir, &err);
    if (rc) printf("load: %s\n", err.msg);
    assert_int_equal(rc, 0);
    hy_ctx_opts o = {.n_threads = 1, .max_chunk = n_prompt}; /* what `hyla run` picks for this prompt */
    hy_ctx *ctx = NULL;
    hy_seq *seq = NULL;
    assert_int_equal(hy_ctx_create(&ctx, m, &o, &err), 0);
    assert_int_equal(hy_seq_create(&seq, m, n_prompt + n_gen, &err), 0);
    size_t ctx_b = hy_ctx_bytes(ctx), seq_b = hy_seq_bytes(seq);
    hy_seq_free(seq);
    hy_ctx_free(ctx);
    hy_model_free(m);

    static cmd_result r;
    char *argv[] = {"hyla", "run", "-m", dir, "--ids", (char *)ids, "-n", "3", "--stats", NULL};
    run_hyla(argv, &r);
    if (r.code) printf("stderr: %s\n", r.err);
    assert_int_equal(r.code, 0);
    printf("%s", r.err);
    const size_t slack = 48u << 20; /* binary, libc, libraries, logits, allocator */
    size_t peak = (size_t)r.maxrss_kb * 1024, limit = file + ctx_b + seq_b + slack;
    printf("checkpoint %zu B (bf16), context %zu B, sequence %zu B: peak RSS of `hyla run` %zu B, limit %zu B "
           "(an fp32 copy of the matrices would add ~%zu B)\n",
           file, ctx_b, seq_b, peak, limit, 2 * file);
    assert_true(peak <= limit);
    assert_true(peak >= file / 10 * 9); /* the mapped weights were really read (and counted) */
    rm_checkpoint(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_cmd),
        cmocka_unit_test(test_run_greedy),
        cmocka_unit_test(test_run_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
