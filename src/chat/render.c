/*
 * The Qwen3.5 / Qwen3.6 chat templates written out in C (see render.h).
 * Threading: reentrant; all state lives in a stack `rctx`.
 * Shape: one function per template region, in template order, so that a
 * reader can hold this file next to tests/data/chat/templates/qwen3_6.jinja.
 * Jinja/Python semantics that matter for the bytes are spelled out where they
 * are used: `|trim` is str.strip() (Unicode whitespace), `tojson` is
 * json.dumps(ensure_ascii=False), `{{ v }}`/`|string` print Python str(v),
 * `x in y` is key membership for objects and substring search for strings,
 * message keys whose value is null are treated as absent (transformers drops
 * them before rendering), and `reasoning`/`thinking` are aliases of
 * `reasoning_content` (transformers' _alias_reasoning_fields).
 */
#include "chat/render.h"

#include "chat/pyjson.h"
#include "chat/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROLE_OTHER = 0, ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL };

typedef struct msg {
    const json_t *obj;
    int role;                /* ROLE_*; ROLE_OTHER also for missing / non-string roles */
    const json_t *content;   /* NULL when absent or null */
    const json_t *reasoning; /* first non-null of reasoning_content, thinking, reasoning */
    const json_t *tool_calls;
    json_t **args;           /* [n_calls] arguments after vLLM's normalization (owned); NULL
                                for calls that are not objects */
    size_t n_calls;
} msg;

/* Sorted [start, end) byte ranges, stored as pairs; adjacent ranges merge. */
typedef struct rangev {
    size_t *v;
    size_t n, cap; /* ranges */
    int oom;
} rangev;

typedef struct rctx {
    const hy_chat_render_opts *o;
    hy_chat_buf out;
    hy_chat_buf tmp; /* scratch for render_content */
    rangev markup;     /* template text in out (see hy_chat_prompt.markup) */
    rangev tmp_markup; /* template text in tmp (media placeholders) */
    hy_err *err;
    size_t image_count, video_count;
} rctx;

static const char TOOLS_HEAD[] = "# Tools\n\nYou have access to the following functions:\n\n<tools>";
static const char TOOLS_TAIL[] =
    "\n</tools>"
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"
    "Reminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> "
    "block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be "
    "specified\n- You may provide optional reasoning for your function call in natural language BEFORE "
    "the function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

/* raise_exception(msg): the message is the template's text, verbatim. */
static int raise(rctx *c, const char *m) { return hy_err_set(c->err, HY_E_INVALID, "%s", m); }

static void range_add(rangev *r, size_t a, size_t b) {
    if (a >= b) return;
    if (r->n && r->v[2 * r->n - 1] == a) {
        r->v[2 * r->n - 1] = b;
        return;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        size_t *v = realloc(r->v, sizeof(size_t) * 2 * cap);
        if (!v) {
            r->oom = 1;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    r->v[2 * r->n] = a;
    r->v[2 * r->n + 1] = b;
    r->n++;
}

/* Template text: the only way the renderer writes its own literals, so everything else in the
 * prompt (request strings, tool JSON) is known to come from the request. */
static void put(rctx *c, const char *s) {
    size_t a = c->out.len;
    hy_chat_buf_puts(&c->out, s);
    range_add(&c->markup, a, c->out.len);
}
/* Request text. */
static void putn(rctx *c, const char *s, size_t n) { hy_chat_buf_put(&c->out, s, n); }
/* n bytes of rendered content whose first byte is at offset off of c->tmp (s holds the same
 * bytes, possibly a copy): request text, except the template's placeholders inside it. */
static void put_tmp(rctx *c, size_t off, const char *s, size_t n) {
    size_t base = c->out.len;
    hy_chat_buf_put(&c->out, s, n);
    for (size_t i = 0; i < c->tmp_markup.n; i++) {
        size_t a = c->tmp_markup.v[2 * i], b = c->tmp_markup.v[2 * i + 1];
        if (a < off) a = off;
        if (b > off + n) b = off + n;
        if (a < b) range_add(&c->markup, base + a - off, base + b - off);
    }
}
/* Template text inside rendered content (c->tmp). */
static void tmp_puts(rctx *c, const char *s) {
    size_t a = c->tmp.len;
    hy_chat_buf_puts(&c->tmp, s);
    range_add(&c->tmp_markup, a, c->tmp.len);
}

static int str_eq(const json_t *v, const char *s) {
    return json_is_string(v) && json_string_length(v) == strlen(s) && !memcmp(json_string_value(v), s, strlen(s));
}

static const char *memmem_s(const char *h, size_t hn, const char *n, size_t nn) {
    if (nn == 0) return h;
    if (hn < nn) return NULL;
    return memmem(h, hn, n, nn);
}

/* Python `key in item`. Returns 1/0, or -1 when Python raises (item is not a container). */
static int py_in(const json_t *item, const char *key) {
    size_t kn = strlen(key);
    switch (json_typeof(item)) {
    case JSON_OBJECT: return json_object_getn(item, key, kn) != NULL;
    case JSON_STRING: return memmem_s(json_string_value(item), json_string_length(item), key, kn) != NULL;
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(item); i++)
            if (str_eq(json_array_get(item, i), key)) return 1;
        return 0;
    default: return -1;
    }
}

/* Jinja `item.name`: an object's member, else undefined (NULL). */
static const json_t *attr(const json_t *item, const char *name) {
    return json_is_object(item) ? json_object_get(item, name) : NULL;
}

/* The template's render_content macro, appended to c->tmp. */
static int render_content(rctx *c, const json_t *content, int do_vision_count, int is_system) {
    hy_chat_buf *b = &c->tmp;
    if (!content || json_is_null(content)) return 0;
    if (json_is_string(content)) {
        hy_chat_buf_put(b, json_string_value(content), json_string_length(content));
        return 0;
    }
    if (!json_is_array(content)) return raise(c, "Unexpected content type.");
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *item = json_array_get(content, i);
        int has_image = py_in(item, "image"), has_image_url = py_in(item, "image_url");
        if (has_image < 0)
            return hy_err_set(c->err, HY_E_INVALID, "content part %zu is a %s, expected an object", i,
                              json_is_null(item) ? "null" : json_is_boolean(item) ? "boolean" : "number");
        if (has_image || has_image_url || str_eq(attr(item, "type"), "image")) {
            if (is_system) return raise(c, "System message cannot contain images.");
            if (do_vision_count) c->image_count++;
            if (c->o->add_vision_id) {
                char t[48];
                snprintf(t, sizeof t, "Picture %zu: ", c->image_count);
                tmp_puts(c, t);
            }
            tmp_puts(c, "<|vision_start|><|image_pad|><|vision_end|>");
        } else if (py_in(item, "video") || str_eq(attr(item, "type"), "video")) {
            if (is_system) return raise(c, "System message cannot contain videos.");
            if (do_vision_count) c->video_count++;
            if (c->o->add_vision_id) {
                char t[48];
                snprintf(t, sizeof t, "Video %zu: ", c->video_count);
                tmp_puts(c, t);
            }
            tmp_puts(c, "<|vision_start|><|video_pad|><|vision_end|>");
        } else if (py_in(item, "text")) {
            const json_t *t = attr(item, "text"); /* undefined prints as '' */
            if (t) hy_pyjson_str(b, t);
        } else {
            return raise(c, "Unexpected item type in content.");
        }
    }
    return 0;
}

/* render_content(...)|trim: leaves the trimmed text in c->tmp (p, n). */
static int content_trimmed(rctx *c, const json_t *content, int do_vision_count, int is_system,
                           const char **p, size_t *n, size_t *off) {
    hy_chat_buf_truncate(&c->tmp, 0);
    c->tmp_markup.n = 0;
    int rc = render_content(c, content, do_vision_count, is_system);
    if (rc) return rc;
    if (c->tmp.oom) return HY_E_NOMEM;
    size_t b, e;
    hy_py_strip(c->tmp.p ? c->tmp.p : "", c->tmp.len, &b, &e);
    *p = (c->tmp.p ? c->tmp.p : "") + b;
    *n = e - b;
    if (off) *off = b;
    return 0;
}

static int starts_with(const char *s, size_t n, const char *pre) {
    size_t m = strlen(pre);
    return n >= m && !memcmp(s, pre, m);
}
static int ends_with(const char *s, size_t n, const char *suf) {
    size_t m = strlen(suf);
    return n >= m && !memcmp(s + n - m, suf, m);
}

/* Python truthiness of a JSON value. */
static int truthy(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return json_object_size(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_TRUE: return 1;
    default: return 0;
    }
}

/* A message key, with null treated as absent. */
static const json_t *field(const json_t *m, const char *k) {
    const json_t *v = json_object_get(m, k);
    return v && !json_is_null(v) ? v : NULL;
}

/* vLLM's _postprocess_messages for one tool call: the object holding name/arguments gets
 * its arguments parsed from a JSON string, or {} when they are falsy. */
static int normalize_args(rctx *c, size_t mi, size_t ci, const json_t *call, json_t **out) {
    *out = NULL;
    if (!json_is_object(call)) return 0;
    const json_t *fn = json_object_get(call, "function");
    if (!json_is_object(fn)) fn = call;
    const json_t *a = json_object_get(fn, "arguments");
    if (!a || !truthy(a)) {
        *out = json_object();
        return *out ? 0 : HY_E_NOMEM;
    }
    if (json_is_object(a)) {
        *out = json_incref((json_t *)a);
        return 0;
    }
    if (!json_is_string(a))
        return hy_err_set(c->err, HY_E_INVALID,
                          "messages[%zu].tool_calls[%zu]: arguments must be an object or a JSON string", mi, ci);
    json_error_t je;
    *out = json_loadb(json_string_value(a), json_string_length(a), JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!*out)
        return hy_err_set(c->err, HY_E_INVALID, "messages[%zu].tool_calls[%zu]: arguments are not valid JSON: %s",
                          mi, ci, je.text);
    return 0;
}

static void free_msgs(msg *ms, size_t n) {
    if (!ms) return;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < ms[i].n_calls; j++) json_decref(ms[i].args[j]);
        free(ms[i].args);
    }
    free(ms);
}

static int load_msgs(rctx *c, const json_t *messages, msg *ms, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(messages, i);
        if (!json_is_object(m)) return hy_err_set(c->err, HY_E_INVALID, "messages[%zu] must be an object", i);
        msg *x = &ms[i];
        x->obj = m;
        const json_t *role = field(m, "role");
        x->role = str_eq(role, "system")      ? ROLE_SYSTEM
                  : str_eq(role, "user")      ? ROLE_USER
                  : str_eq(role, "assistant") ? ROLE_ASSISTANT
                  : str_eq(role, "tool")      ? ROLE_TOOL
                                              : ROLE_OTHER;
        x->content = field(m, "content");
        x->reasoning = field(m, "reasoning_content");
        if (!x->reasoning) x->reasoning = field(m, "thinking");
        if (!x->reasoning) x->reasoning = field(m, "reasoning");
        x->tool_calls = field(m, "tool_calls");
    }
    /* vLLM parses string arguments before the template runs, so its errors come first. */
    for (size_t i = 0; i < n; i++) {
        msg *x = &ms[i];
        if (x->role != ROLE_ASSISTANT || !json_is_array(x->tool_calls) || !json_array_size(x->tool_calls)) continue;
        x->n_calls = json_array_size(x->tool_calls);
        x->args = calloc(x->n_calls, sizeof *x->args);
        if (!x->args) {
            x->n_calls = 0;
            return HY_E_NOMEM;
        }
        for (size_t j = 0; j < x->n_calls; j++) {
            int rc = normalize_args(c, i, j, json_array_get(x->tool_calls, j), &x->args[j]);
            if (rc) return rc;
        }
    }
    return 0;
}

/* Tool block and/or system turn (before the message loop). */
static int render_system(rctx *c, const json_t *tools, const msg *ms, hy_chat_span *span0) {
    int first_is_system = ms[0].role == ROLE_SYSTEM;
    const char *s;
    size_t n, off;
    if (tools && json_array_size(tools)) {
        put(c, "<|im_start|>system\n");
        put(c, TOOLS_HEAD);
        for (size_t i = 0; i < json_array_size(tools); i++) {
            put(c, "\n");
            if (hy_pyjson_dumps(&c->out, json_array_get(tools, i)) == HY_E_INVALID)
                return hy_err_set(c->err, HY_E_INVALID, "tools[%zu]: a number is not finite", i);
        }
        put(c, TOOLS_TAIL);
        if (first_is_system) {
            int rc = content_trimmed(c, ms[0].content, 0, 1, &s, &n, &off);
            if (rc) return rc;
            if (n) {
                put(c, "\n\n");
                put_tmp(c, off, s, n);
            }
        }
        put(c, "<|im_end|>\n");
    } else if (first_is_system) {
        int rc = content_trimmed(c, ms[0].content, 0, 1, &s, &n, &off);
        if (rc) return rc;
        put(c, "<|im_start|>system\n");
        put_tmp(c, off, s, n);
        put(c, "<|im_end|>\n");
    }
    if (first_is_system) span0->end = c->out.len;
    return 0;
}

/* Scan backwards for the last user message that is not a wrapped tool response. */
static int find_last_query(rctx *c, const msg *ms, size_t n, size_t *last) {
    for (size_t k = n; k-- > 0;) {
        if (ms[k].role != ROLE_USER) continue;
        const char *s;
        size_t len;
        int rc = content_trimmed(c, ms[k].content, 0, 0, &s, &len, NULL);
        if (rc) return rc;
        if (!(starts_with(s, len, "<tool_response>") && ends_with(s, len, "</tool_response>"))) {
            *last = k;
            return 0;
        }
    }
    return raise(c, "No user query found in messages.");
}

/* One argument value: Qwen3.6 prints strings raw and everything else with tojson;
 * Qwen3.5 uses tojson for objects/arrays and Python str() for the rest. */
static int render_arg_value(rctx *c, const json_t *v) {
    if (json_is_string(v)) {
        putn(c, json_string_value(v), json_string_length(v));
        return 0;
    }
    if (c->o->tmpl == HY_CHAT_TEMPLATE_QWEN3_6 || json_is_object(v) || json_is_array(v)) {
        if (hy_pyjson_dumps(&c->out, v) == HY_E_INVALID)
            return hy_err_set(c->err, HY_E_INVALID, "tool call argument is not a finite number");
        return 0;
    }
    return hy_pyjson_str(&c->out, v);
}

static int render_tool_calls(rctx *c, const msg *m, size_t mi, const char *content, size_t content_len) {
    const json_t *tc = m->tool_calls;
    /* `tool_calls and tool_calls is iterable and tool_calls is not mapping` */
    if (!tc || !truthy(tc) || json_is_object(tc) || json_is_number(tc) || json_is_boolean(tc)) return 0;
    if (json_is_string(tc)) /* iterating a string yields characters, which have no .name */
        return hy_err_set(c->err, HY_E_INVALID, "messages[%zu].tool_calls must be a list of tool calls", mi);
    size_t cb, ce;
    hy_py_strip(content, content_len, &cb, &ce);
    for (size_t j = 0; j < json_array_size(tc); j++) {
        const json_t *call = json_array_get(tc, j);
        const json_t *fn = call;
        if (json_is_object(call) && json_object_get(call, "function")) fn = json_object_get(call, "function");
        const json_t *name = attr(fn, "name");
        if (!json_is_string(name))
            return hy_err_set(c->err, HY_E_INVALID, "messages[%zu].tool_calls[%zu] has no function name (string)", mi, j);
        if (j == 0) put(c, ce > cb ? "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=");
        else put(c, "\n<tool_call>\n<function=");
        putn(c, json_string_value(name), json_string_length(name));
        put(c, ">\n");
        if (json_is_object(fn) && json_object_get(fn, "arguments")) {
            const json_t *args = j < m->n_calls ? m->args[j] : NULL;
            if (!json_is_object(args)) return hy_err_set(c->err, HY_E_INVALID, "Can only get item pairs from a mapping.");
            for (void *it = json_object_iter((json_t *)args); it; it = json_object_iter_next((json_t *)args, it)) {
                put(c, "<parameter=");
                putn(c, json_object_iter_key(it), json_object_iter_key_len(it));
                put(c, ">\n");
                int rc = render_arg_value(c, json_object_iter_value(it));
                if (rc) return rc;
                put(c, "\n</parameter>\n");
            }
        }
        put(c, "</function>\n</tool_call>");
    }
    return 0;
}

static int render_assistant(rctx *c, const msg *m, size_t i, size_t last_query, const char *content, size_t n,
                            size_t tmp_off) {
    /* content lives in c->tmp; copy it since reasoning extraction may rewrite it */
    char *own = malloc(n + 1);
    if (!own) return HY_E_NOMEM;
    memcpy(own, content, n);
    own[n] = 0;
    const char *cs = own, *rs = "";
    size_t cn = n, rn = 0;
    /* own[k] is c->tmp byte tmp_off + k */
    int rs_in_own = 0;
    if (json_is_string(m->reasoning)) {
        rs = json_string_value(m->reasoning);
        rn = json_string_length(m->reasoning);
    } else if (memmem_s(own, n, "</think>", 8)) {
        /* reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        const char *first_close = memmem_s(own, n, "</think>", 8);
        size_t head = (size_t)(first_close - own);
        while (head && own[head - 1] == '\n') head--;
        size_t start = 0;
        for (const char *p = own; (p = memmem_s(p, head - (size_t)(p - own), "<think>", 7)); p += 7)
            start = (size_t)(p - own) + 7;
        while (start < head && own[start] == '\n') start++;
        rs = own + start;
        rn = head - start;
        rs_in_own = 1;
        /* content = content.split('</think>')[-1].lstrip('\n') */
        size_t tail = 0;
        for (const char *p = own; (p = memmem_s(p, n - (size_t)(p - own), "</think>", 8)); p += 8)
            tail = (size_t)(p - own) + 8;
        while (tail < n && own[tail] == '\n') tail++;
        cs = own + tail;
        cn = n - tail;
    }
    size_t rb, re;
    hy_py_strip(rs, rn, &rb, &re);
    int keep_think = i > last_query || (c->o->tmpl == HY_CHAT_TEMPLATE_QWEN3_6 && c->o->preserve_thinking == 1);
    if (keep_think) {
        put(c, "<|im_start|>assistant\n<think>\n");
        if (rs_in_own) put_tmp(c, tmp_off + (size_t)(rs + rb - own), rs + rb, re - rb);
        else putn(c, rs + rb, re - rb);
        put(c, "\n</think>\n\n");
    } else {
        put(c, "<|im_start|>assistant\n");
    }
    put_tmp(c, tmp_off + (size_t)(cs - own), cs, cn);
    int rc = render_tool_calls(c, m, i, cs, cn);
    free(own);
    if (rc) return rc;
    put(c, "<|im_end|>\n");
    return 0;
}

static int render_messages(rctx *c, const msg *ms, size_t n, size_t last_query, hy_chat_span *spans) {
    for (size_t i = 0; i < n; i++) {
        const msg *m = &ms[i];
        size_t start = c->out.len;
        const char *s;
        size_t len;
        size_t off;
        int rc = content_trimmed(c, m->content, 1, 0, &s, &len, &off);
        if (rc) return rc;
        switch (m->role) {
        case ROLE_SYSTEM:
            if (i != 0) return raise(c, "System message must be at the beginning.");
            continue; /* rendered before the loop; keep its span */
        case ROLE_USER:
            put(c, "<|im_start|>user\n");
            put_tmp(c, off, s, len);
            put(c, "<|im_end|>\n");
            break;
        case ROLE_ASSISTANT:
            rc = render_assistant(c, m, i, last_query, s, len, off);
            if (rc) return rc;
            break;
        case ROLE_TOOL:
            if (i > 0 && ms[i - 1].role != ROLE_TOOL) put(c, "<|im_start|>user");
            put(c, "\n<tool_response>\n");
            put_tmp(c, off, s, len);
            put(c, "\n</tool_response>");
            if (i + 1 == n || ms[i + 1].role != ROLE_TOOL) put(c, "<|im_end|>\n");
            break;
        default:
            return raise(c, "Unexpected message role.");
        }
        spans[i].start = start;
        spans[i].end = c->out.len;
    }
    return 0;
}

void hy_chat_render_opts_default(hy_chat_render_opts *o) {
    memset(o, 0, sizeof *o);
    o->tmpl = HY_CHAT_TEMPLATE_QWEN3_6;
    o->add_generation_prompt = 1;
    o->enable_thinking = HY_CHAT_UNSET;
    o->preserve_thinking = HY_CHAT_UNSET;
}

void hy_chat_render_opts_apply_kwargs(hy_chat_render_opts *o, const json_t *kwargs) {
    if (!json_is_object(kwargs)) return;
    const json_t *v;
    if ((v = json_object_get(kwargs, "enable_thinking")))
        o->enable_thinking = json_is_true(v) ? 1 : json_is_false(v) ? 0 : HY_CHAT_UNSET;
    if ((v = json_object_get(kwargs, "preserve_thinking")))
        o->preserve_thinking = json_is_true(v) ? 1 : json_is_false(v) ? 0 : HY_CHAT_UNSET;
    if ((v = json_object_get(kwargs, "add_vision_id"))) o->add_vision_id = truthy(v);
}

int hy_chat_render(const json_t *messages, const json_t *tools, const hy_chat_render_opts *opts,
                   hy_chat_prompt *out, hy_err *err) {
    hy_chat_render_opts defaults;
    if (!opts) {
        hy_chat_render_opts_default(&defaults);
        opts = &defaults;
    }
    memset(out, 0, sizeof *out);
    if (!json_is_array(messages)) return hy_err_set(err, HY_E_INVALID, "messages must be an array");
    if (tools && json_is_null(tools)) tools = NULL;
    if (tools) {
        if (!json_is_array(tools)) return hy_err_set(err, HY_E_INVALID, "tools must be an array");
        for (size_t i = 0; i < json_array_size(tools); i++)
            if (!json_is_object(json_array_get(tools, i)))
                return hy_err_set(err, HY_E_INVALID, "tools[%zu] must be an object", i);
    }
    size_t n = json_array_size(messages);
    rctx c = {.o = opts, .err = err};
    hy_chat_buf_init(&c.out);
    hy_chat_buf_init(&c.tmp);
    msg *ms = calloc(n ? n : 1, sizeof *ms);
    hy_chat_span *spans = calloc(n ? n : 1, sizeof *spans);
    size_t last_query = 0;
    int rc = 0;
    if (!ms || !spans) {
        rc = HY_E_NOMEM;
        goto done;
    }
    if ((rc = load_msgs(&c, messages, ms, n))) goto done;
    if (n == 0) {
        rc = raise(&c, "No messages provided.");
        goto done;
    }
    if ((rc = render_system(&c, tools, ms, &spans[0]))) goto done;
    if ((rc = find_last_query(&c, ms, n, &last_query))) goto done;
    if ((rc = render_messages(&c, ms, n, last_query, spans))) goto done;
    out->history_end = c.out.len;
    if (opts->add_generation_prompt) {
        put(&c, "<|im_start|>assistant\n");
        int think = opts->tmpl == HY_CHAT_TEMPLATE_QWEN3_5_NOTHINK ? opts->enable_thinking == 1
                                                                   : opts->enable_thinking != 0;
        put(&c, think ? "<think>\n" : "<think>\n\n</think>\n\n");
        out->thinking = think;
    }
    if (c.out.oom || c.tmp.oom || c.markup.oom || c.tmp_markup.oom) {
        rc = HY_E_NOMEM;
        goto done;
    }
    out->text = hy_chat_buf_take(&c.out, &out->len);
    if (!out->text) {
        rc = HY_E_NOMEM;
        goto done;
    }
    out->markup = c.markup.v;
    out->n_markup = c.markup.n;
    c.markup.v = NULL;
    out->n_messages = n;
    out->messages = spans;
    spans = NULL;
    out->last_query_index = last_query;
    out->n_images = c.image_count;
    out->n_videos = c.video_count;
done:
    if (rc == HY_E_NOMEM) hy_err_set(err, HY_E_NOMEM, "chat render: out of memory");
    free_msgs(ms, n);
    free(spans);
    hy_chat_buf_free(&c.out);
    hy_chat_buf_free(&c.tmp);
    free(c.markup.v);
    free(c.tmp_markup.v);
    if (rc) {
        free(out->text);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

void hy_chat_prompt_free(hy_chat_prompt *p) {
    if (!p) return;
    free(p->text);
    free(p->messages);
    free(p->markup);
    memset(p, 0, sizeof *p);
}
