/*
 * OpenAI request validation and response JSON (contract in openai.h).
 * Validation is table-free, field by field, because each field has its own
 * accepted shapes (e.g. `stop` is a string or a list, `prompt` a string or
 * token ids) and each error must name the field. A null value means "unset",
 * as the official clients send explicit nulls for omitted options.
 */
#include "server/openai.h"

#include "base/u8scan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- errors ---------------- */

static const char *type_for_status(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

int hy_oai_error_set(hy_oai_error *err, int status, const char *param, const char *fmt, ...) {
    memset(err, 0, sizeof *err);
    err->status = status;
    snprintf(err->type, sizeof err->type, "%s", type_for_status(status));
    if (param) snprintf(err->param, sizeof err->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return status;
}

char *hy_oai_error_json(const hy_oai_error *err) {
    json_t *e = json_object();
    json_object_set_new(e, "message", hy_oai_json_stringn(err->message, strlen(err->message)));
    json_object_set_new(e, "type", json_string(err->type[0] ? err->type : type_for_status(err->status)));
    json_object_set_new(e, "param", err->param[0] ? hy_oai_json_stringn(err->param, strlen(err->param)) : json_null());
    json_object_set_new(e, "code", err->code[0] ? json_string(err->code) : json_null());
    json_t *root = json_object();
    json_object_set_new(root, "error", e);
    char *s = hy_oai_dump(root);
    json_decref(root);
    return s;
}

/* ---------------- field helpers ---------------- */

/* The value of key, or NULL when absent or null. */
static json_t *field(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

#define BAD(param, ...) hy_oai_error_set(err, 400, param, __VA_ARGS__)

static int get_number(json_t *root, const char *key, double lo, double hi, double *out, bool *set, hy_oai_error *err) {
    json_t *v = field(root, key);
    *set = false;
    if (!v) return 0;
    if (!json_is_number(v)) return BAD(key, "'%s' must be a number", key);
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return BAD(key, "'%s' = %g is out of range [%g, %g]", key, d, lo, hi);
    *out = d;
    *set = true;
    return 0;
}

/* Integer or integral real within [lo, hi]. */
static int as_int(json_t *v, const char *name, long long lo, long long hi, long long *out, hy_oai_error *err) {
    long long x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d == floor(d)) || fabs(d) > 9.0e15) return BAD(name, "'%s' must be an integer", name);
        x = (long long)d;
    } else {
        return BAD(name, "'%s' must be an integer", name);
    }
    if (x < lo || x > hi) return BAD(name, "'%s' = %lld is out of range [%lld, %lld]", name, x, lo, hi);
    *out = x;
    return 0;
}

static int get_int(json_t *root, const char *key, long long lo, long long hi, long long *out, bool *set,
                   hy_oai_error *err) {
    json_t *v = field(root, key);
    *set = false;
    if (!v) return 0;
    int rc = as_int(v, key, lo, hi, out, err);
    if (!rc) *set = true;
    return rc;
}

static int get_bool(json_t *root, const char *key, bool *out, hy_oai_error *err) {
    json_t *v = field(root, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) return BAD(key, "'%s' must be a boolean", key);
    *out = json_is_true(v);
    return 0;
}

static int get_string(json_t *root, const char *key, const char **out, hy_oai_error *err) {
    json_t *v = field(root, key);
    if (!v) return 0;
    if (!json_is_string(v)) return BAD(key, "'%s' must be a string", key);
    *out = json_string_value(v);
    return 0;
}

/* ---------------- chat pieces ---------------- */

static int check_content(json_t *c, size_t mi, hy_oai_error *err) {
    char p[64];
    snprintf(p, sizeof p, "messages[%zu].content", mi);
    if (!c || json_is_null(c) || json_is_string(c)) return 0;
    if (!json_is_array(c)) return BAD(p, "'%s' must be a string, an array of content parts or null", p);
    size_t j;
    json_t *part;
    json_array_foreach(c, j, part) {
        char pp[128];
        snprintf(pp, sizeof pp, "%s[%zu]", p, j);
        if (!json_is_object(part)) return BAD(pp, "'%s' must be an object", pp);
        json_t *t = json_object_get(part, "type");
        if (!json_is_string(t)) return BAD(pp, "'%s.type' must be a string", pp);
        const char *ts = json_string_value(t);
        if (!strcmp(ts, "text")) {
            if (!json_is_string(json_object_get(part, "text"))) return BAD(pp, "'%s.text' must be a string", pp);
        } else if (!strcmp(ts, "image_url") || !strcmp(ts, "input_audio") || !strcmp(ts, "image") ||
                   !strcmp(ts, "video") || !strcmp(ts, "video_url") || !strcmp(ts, "file")) {
            return BAD(pp, "'%s' is a '%s' part: this server serves a text-only model", pp, ts);
        } else {
            return BAD(pp, "'%s.type' = '%s' is not a known content part type", pp, ts);
        }
    }
    return 0;
}

static int check_messages(json_t *msgs, hy_oai_error *err) {
    if (!msgs) return BAD("messages", "'messages' is required");
    if (!json_is_array(msgs)) return BAD("messages", "'messages' must be an array");
    if (json_array_size(msgs) == 0) return BAD("messages", "'messages' must not be empty");
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        char p[64];
        snprintf(p, sizeof p, "messages[%zu]", i);
        if (!json_is_object(m)) return BAD(p, "'%s' must be an object", p);
        json_t *role = json_object_get(m, "role");
        if (!json_is_string(role)) return BAD(p, "'%s.role' must be a string", p);
        const char *r = json_string_value(role);
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool") &&
            strcmp(r, "developer"))
            return BAD(p, "'%s.role' = '%s' is not one of system, developer, user, assistant, tool", p, r);
        int rc = check_content(json_object_get(m, "content"), i, err);
        if (rc) return rc;
        static const char *const str_fields[] = {"reasoning_content", "reasoning", "name", "tool_call_id"};
        for (size_t k = 0; k < sizeof str_fields / sizeof *str_fields; k++) {
            json_t *v = json_object_get(m, str_fields[k]);
            if (v && !json_is_null(v) && !json_is_string(v))
                return BAD(p, "'%s.%s' must be a string", p, str_fields[k]);
        }
        json_t *tc = json_object_get(m, "tool_calls");
        if (tc && !json_is_null(tc)) {
            if (!json_is_array(tc)) return BAD(p, "'%s.tool_calls' must be an array", p);
            size_t j;
            json_t *c;
            json_array_foreach(tc, j, c) {
                char pp[160];
                snprintf(pp, sizeof pp, "%s.tool_calls[%zu]", p, j);
                json_t *fn = json_is_object(c) ? json_object_get(c, "function") : NULL;
                if (!json_is_object(fn)) return BAD(pp, "'%s.function' must be an object", pp);
                if (!json_is_string(json_object_get(fn, "name"))) return BAD(pp, "'%s.function.name' must be a string", pp);
                json_t *a = json_object_get(fn, "arguments");
                if (a && !json_is_null(a) && !json_is_string(a) && !json_is_object(a))
                    return BAD(pp, "'%s.function.arguments' must be a JSON string or an object", pp);
            }
        }
    }
    return 0;
}

static int check_tools(json_t *tools, hy_oai_error *err) {
    if (!json_is_array(tools)) return BAD("tools", "'tools' must be an array");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        char p[48];
        snprintf(p, sizeof p, "tools[%zu]", i);
        if (!json_is_object(t)) return BAD(p, "'%s' must be an object", p);
        json_t *ty = json_object_get(t, "type");
        if (ty && !json_is_null(ty) && (!json_is_string(ty) || strcmp(json_string_value(ty), "function")))
            return BAD(p, "'%s.type' must be \"function\"", p);
        json_t *fn = json_object_get(t, "function");
        if (!json_is_object(fn)) return BAD(p, "'%s.function' must be an object", p);
        json_t *name = json_object_get(fn, "name");
        if (!json_is_string(name) || !json_string_length(name)) return BAD(p, "'%s.function.name' must be a non-empty string", p);
        json_t *d = json_object_get(fn, "description");
        if (d && !json_is_null(d) && !json_is_string(d)) return BAD(p, "'%s.function.description' must be a string", p);
        json_t *pa = json_object_get(fn, "parameters");
        if (pa && !json_is_null(pa) && !json_is_object(pa)) return BAD(p, "'%s.function.parameters' must be an object", p);
    }
    return 0;
}

static bool tool_exists(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *n = json_object_get(json_object_get(t, "function"), "name");
        if (json_is_string(n) && !strcmp(json_string_value(n), name)) return true;
    }
    return false;
}

static int parse_tool_choice(json_t *root, hy_oai_request *r, hy_oai_error *err) {
    json_t *tc = field(root, "tool_choice");
    r->tool_choice = HY_TOOL_CHOICE_AUTO;
    bool have_tools = r->tools && json_array_size(r->tools) > 0;
    if (tc) {
        if (json_is_string(tc)) {
            const char *s = json_string_value(tc);
            if (!strcmp(s, "auto")) r->tool_choice = HY_TOOL_CHOICE_AUTO;
            else if (!strcmp(s, "none")) r->tool_choice = HY_TOOL_CHOICE_NONE;
            else if (!strcmp(s, "required")) r->tool_choice = HY_TOOL_CHOICE_REQUIRED;
            else return BAD("tool_choice", "'tool_choice' = '%s' is not one of none, auto, required", s);
        } else if (json_is_object(tc)) {
            json_t *fn = json_object_get(tc, "function");
            json_t *name = json_is_object(fn) ? json_object_get(fn, "name") : NULL;
            if (!json_is_string(name)) return BAD("tool_choice", "'tool_choice.function.name' must be a string");
            r->tool_choice = HY_TOOL_CHOICE_NAMED;
            r->tool_choice_name = json_string_value(name);
        } else {
            return BAD("tool_choice", "'tool_choice' must be a string or an object");
        }
    }
    if (r->tool_choice == HY_TOOL_CHOICE_REQUIRED && !have_tools)
        return BAD("tool_choice", "'tool_choice' is \"required\" but no tools were given");
    if (r->tool_choice == HY_TOOL_CHOICE_NAMED) {
        if (!have_tools || !tool_exists(r->tools, r->tool_choice_name))
            return BAD("tool_choice", "'tool_choice' names '%s', which is not in 'tools'", r->tool_choice_name);
    }
    if (r->tool_choice == HY_TOOL_CHOICE_NONE) r->tools = NULL; /* not rendered at all */
    if (r->tools && !have_tools) r->tools = NULL;
    return 0;
}

static int parse_chat(json_t *root, hy_oai_request *r, hy_oai_error *err) {
    int rc;
    r->messages = field(root, "messages");
    if ((rc = check_messages(r->messages, err))) return rc;
    json_t *tools = field(root, "tools");
    if (tools) {
        if ((rc = check_tools(tools, err))) return rc;
        r->tools = tools;
    }
    if ((rc = parse_tool_choice(root, r, err))) return rc;
    r->parallel_tool_calls = true;
    if ((rc = get_bool(root, "parallel_tool_calls", &r->parallel_tool_calls, err))) return rc;

    json_t *kw = field(root, "chat_template_kwargs");
    if (kw) {
        if (!json_is_object(kw)) return BAD("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        r->chat_template_kwargs = kw;
        json_t *et = field(kw, "enable_thinking");
        if (et) {
            if (!json_is_boolean(et))
                return BAD("chat_template_kwargs.enable_thinking", "'chat_template_kwargs.enable_thinking' must be a boolean");
            r->enable_thinking = json_is_true(et);
        }
        json_t *pt = field(kw, "preserve_thinking");
        if (pt) {
            if (!json_is_boolean(pt))
                return BAD("chat_template_kwargs.preserve_thinking", "'chat_template_kwargs.preserve_thinking' must be a boolean");
            r->preserve_thinking = json_is_true(pt);
        }
    }
    const char *effort = NULL;
    if ((rc = get_string(root, "reasoning_effort", &effort, err))) return rc;
    if (effort) {
        static const char *const ok[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max"};
        bool found = false;
        for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) found |= !strcmp(effort, ok[i]);
        if (!found) return BAD("reasoning_effort", "'reasoning_effort' = '%s' is not one of none, minimal, low, medium, high, xhigh, max", effort);
        if (r->enable_thinking < 0) r->enable_thinking = strcmp(effort, "none") != 0;
    }
    bool lp = false;
    if ((rc = get_bool(root, "logprobs", &lp, err))) return rc;
    long long tl = 0;
    bool set;
    if ((rc = get_int(root, "top_logprobs", 0, HY_MAX_TOP_LOGPROBS, &tl, &set, err))) return rc;
    if (set && tl > 0 && !lp) return BAD("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
    r->logprobs = lp;
    r->top_logprobs = (int)tl;
    json_t *rf = field(root, "response_format");
    if (rf) {
        json_t *t = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
        if (!json_is_string(t)) return BAD("response_format", "'response_format.type' must be a string");
        if (strcmp(json_string_value(t), "text"))
            return BAD("response_format", "'response_format' type '%s' is not supported (only \"text\")", json_string_value(t));
    }
    long long mt;
    if ((rc = get_int(root, "max_tokens", 1, INT32_MAX, &mt, &set, err))) return rc;
    if (set) r->max_tokens = (int)mt;
    if ((rc = get_int(root, "max_completion_tokens", 1, INT32_MAX, &mt, &set, err))) return rc;
    if (set) r->max_tokens = (int)mt;
    return 0;
}

static int add_prompt_ids(json_t *arr, const char *name, const hy_oai_limits *lim, hy_oai_request *r,
                          hy_oai_error *err) {
    size_t n = json_array_size(arr);
    if (n == 0) return BAD(name, "'%s' must not be empty", name);
    if (n > (size_t)INT32_MAX / 8) return hy_oai_error_set(err, 400, name, "'%s' is too long", name);
    r->prompt_ids = malloc(sizeof(int32_t) * n);
    if (!r->prompt_ids) return hy_oai_error_set(err, 500, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char p[48];
        snprintf(p, sizeof p, "%s[%zu]", name, i);
        long long v;
        int rc = as_int(json_array_get(arr, i), p, 0, lim->vocab_size - 1, &v, err);
        if (rc) return rc;
        r->prompt_ids[i] = (int32_t)v;
    }
    r->n_prompt_ids = (int)n;
    return 0;
}

static int parse_completion(json_t *root, const hy_oai_limits *lim, hy_oai_request *r, hy_oai_error *err) {
    json_t *p = field(root, "prompt");
    if (!p) return BAD("prompt", "'prompt' is required");
    if (json_is_string(p)) {
        r->prompt = json_string_value(p);
        r->prompt_len = json_string_length(p);
    } else if (json_is_array(p)) {
        size_t n = json_array_size(p);
        if (n == 0) return BAD("prompt", "'prompt' must not be empty");
        json_t *first = json_array_get(p, 0);
        if (json_is_number(first)) {
            int rc = add_prompt_ids(p, "prompt", lim, r, err);
            if (rc) return rc;
        } else {
            if (n > 1) return BAD("prompt", "batched prompts (a list of %zu prompts) are not supported; send one request per prompt", n);
            if (json_is_string(first)) {
                r->prompt = json_string_value(first);
                r->prompt_len = json_string_length(first);
            } else if (json_is_array(first)) {
                int rc = add_prompt_ids(first, "prompt[0]", lim, r, err);
                if (rc) return rc;
            } else {
                return BAD("prompt", "'prompt' must be a string, a list of token ids or a list with one of these");
            }
        }
    } else {
        return BAD("prompt", "'prompt' must be a string or a list of token ids");
    }
    if (r->prompt && r->prompt_len == 0) return BAD("prompt", "'prompt' must not be empty");
    bool echo = false;
    int rc;
    if ((rc = get_bool(root, "echo", &echo, err))) return rc;
    if (echo) return BAD("echo", "'echo' is not supported");
    if (field(root, "suffix")) return BAD("suffix", "'suffix' is not supported");
    long long v;
    bool set;
    if ((rc = get_int(root, "best_of", 1, 1, &v, &set, err))) return rc;
    if ((rc = get_int(root, "logprobs", 0, HY_MAX_TOP_LOGPROBS, &v, &set, err))) return rc;
    if (set) {
        r->logprobs = true;
        r->top_logprobs = (int)v;
    }
    if ((rc = get_int(root, "max_tokens", 1, INT32_MAX, &v, &set, err))) return rc;
    if (set) r->max_tokens = (int)v;
    return 0;
}

static int parse_stop(json_t *root, const hy_oai_limits *lim, hy_oai_request *r, hy_oai_error *err) {
    json_t *s = field(root, "stop");
    if (s) {
        json_t *one = json_is_string(s) ? s : NULL;
        size_t n = one ? 1 : json_is_array(s) ? json_array_size(s) : 0;
        if (!one && !json_is_array(s)) return BAD("stop", "'stop' must be a string or a list of strings");
        if (n > HY_OAI_MAX_STOP) return BAD("stop", "'stop' has %zu entries; at most %d are allowed", n, HY_OAI_MAX_STOP);
        for (size_t i = 0; i < n; i++) {
            json_t *x = one ? one : json_array_get(s, i);
            if (!json_is_string(x)) return BAD("stop", "'stop[%zu]' must be a string", i);
            size_t len = json_string_length(x);
            if (len > HY_OAI_MAX_STOP_LEN) return BAD("stop", "'stop[%zu]' is longer than %d bytes", i, HY_OAI_MAX_STOP_LEN);
            if (len == 0) continue; /* an empty stop string can never be meant */
            r->stop[r->n_stop] = strdup(json_string_value(x));
            if (!r->stop[r->n_stop]) return hy_oai_error_set(err, 500, NULL, "out of memory");
            r->n_stop++;
        }
    }
    json_t *ids = field(root, "stop_token_ids");
    if (ids) {
        if (!json_is_array(ids)) return BAD("stop_token_ids", "'stop_token_ids' must be a list of integers");
        if (json_array_size(ids) > HY_OAI_MAX_STOP_IDS)
            return BAD("stop_token_ids", "'stop_token_ids' has more than %d entries", HY_OAI_MAX_STOP_IDS);
        size_t i;
        json_t *x;
        json_array_foreach(ids, i, x) {
            long long v;
            int rc = as_int(x, "stop_token_ids", 0, lim->vocab_size - 1, &v, err);
            if (rc) return rc;
            r->stop_ids[r->n_stop_ids++] = (int32_t)v;
        }
    }
    return 0;
}

static int parse_logit_bias(json_t *root, const hy_oai_limits *lim, hy_oai_request *r, hy_oai_error *err) {
    json_t *b = field(root, "logit_bias");
    if (!b) return 0;
    if (!json_is_object(b)) return BAD("logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
    size_t n = json_object_size(b);
    if (n > HY_OAI_MAX_LOGIT_BIAS) return BAD("logit_bias", "'logit_bias' has more than %d entries", HY_OAI_MAX_LOGIT_BIAS);
    if (n == 0) return 0;
    r->bias_ids = malloc(sizeof(int32_t) * n);
    r->bias_values = malloc(sizeof(float) * n);
    if (!r->bias_ids || !r->bias_values) return hy_oai_error_set(err, 500, NULL, "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(b, k, v) {
        char *end;
        long id = strtol(k, &end, 10);
        if (!*k || *end || id < 0 || id >= lim->vocab_size)
            return BAD("logit_bias", "'logit_bias' key '%.40s' is not a token id in [0, %d)", k, lim->vocab_size);
        if (!json_is_number(v) || !(json_number_value(v) >= -100 && json_number_value(v) <= 100))
            return BAD("logit_bias", "'logit_bias[\"%s\"]' must be a number in [-100, 100]", k);
        r->bias_ids[r->n_bias] = (int32_t)id;
        r->bias_values[r->n_bias] = (float)json_number_value(v);
        r->n_bias++;
    }
    r->sp.n_bias = r->n_bias;
    r->sp.bias_ids = r->bias_ids;
    r->sp.bias_values = r->bias_values;
    return 0;
}

static int parse_sampling(json_t *root, hy_oai_request *r, hy_oai_error *err) {
    double d;
    bool set;
    int rc;
#define NUM(key, lo, hi, bit, assign)                                          \
    if ((rc = get_number(root, key, lo, hi, &d, &set, err))) return rc;        \
    if (set) {                                                                 \
        assign;                                                                \
        r->set_mask |= bit;                                                    \
    }
    NUM("temperature", 0.0, 100.0, HY_SET_TEMPERATURE, r->sp.temperature = (float)d)
    NUM("top_p", 0.0, 1.0, HY_SET_TOP_P, r->sp.top_p = (float)d)
    NUM("min_p", 0.0, 1.0, HY_SET_MIN_P, r->sp.min_p = (float)d)
    NUM("presence_penalty", -2.0, 2.0, HY_SET_PRESENCE, r->sp.presence_penalty = (float)d)
    NUM("frequency_penalty", -2.0, 2.0, HY_SET_FREQUENCY, r->sp.frequency_penalty = (float)d)
    NUM("repetition_penalty", 0.0, 100.0, HY_SET_REPETITION, r->sp.repetition_penalty = (float)d)
#undef NUM
    if ((r->set_mask & HY_SET_TOP_P) && r->sp.top_p <= 0.0f) return BAD("top_p", "'top_p' must be > 0");
    if ((r->set_mask & HY_SET_REPETITION) && r->sp.repetition_penalty <= 0.0f)
        return BAD("repetition_penalty", "'repetition_penalty' must be > 0");
    long long v;
    if ((rc = get_int(root, "top_k", -1, INT32_MAX, &v, &set, err))) return rc;
    if (set) {
        r->sp.top_k = v < 0 ? 0 : (int)v;
        r->set_mask |= HY_SET_TOP_K;
    }
    if ((rc = get_int(root, "seed", INT64_MIN, INT64_MAX, &v, &set, err))) return rc;
    if (set) {
        r->sp.seed = (uint64_t)v;
        r->set_mask |= HY_SET_SEED;
    }
    return 0;
}

int hy_oai_parse_request(hy_oai_kind kind, const char *body, size_t len, const hy_oai_limits *lim,
                         hy_oai_request *r, hy_oai_error *err) {
    memset(r, 0, sizeof *r);
    memset(err, 0, sizeof *err);
    r->kind = kind;
    r->max_tokens = -1;
    r->n = 1;
    r->enable_thinking = -1;
    r->preserve_thinking = -1;
    hy_sampling_params_default(&r->sp);
    json_error_t je;
    r->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    int rc = 0;
    if (!r->root) {
        rc = BAD(NULL, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
        goto fail;
    }
    json_t *root = r->root;
    if (!json_is_object(root)) {
        rc = BAD(NULL, "the request body must be a JSON object");
        goto fail;
    }
    if ((rc = get_string(root, "model", &r->model, err))) goto fail;
    if ((rc = get_string(root, "user", &r->user, err))) goto fail;
    rc = kind == HY_OAI_CHAT ? parse_chat(root, r, err) : parse_completion(root, lim, r, err);
    if (rc) goto fail;
    if ((rc = parse_sampling(root, r, err))) goto fail;
    if ((rc = parse_stop(root, lim, r, err))) goto fail;
    if ((rc = parse_logit_bias(root, lim, r, err))) goto fail;
    long long n;
    bool set;
    if ((rc = get_int(root, "n", 1, lim->max_n, &n, &set, err))) goto fail;
    if (set) r->n = (int)n;
    if ((rc = get_bool(root, "ignore_eos", &r->ignore_eos, err))) goto fail;
    if ((rc = get_bool(root, "stream", &r->stream, err))) goto fail;
    json_t *so = field(root, "stream_options");
    if (so) {
        if (!json_is_object(so)) {
            rc = BAD("stream_options", "'stream_options' must be an object");
            goto fail;
        }
        if (!r->stream) {
            rc = BAD("stream_options", "'stream_options' is only allowed when 'stream' is true");
            goto fail;
        }
        json_t *iu = field(so, "include_usage");
        if (iu && !json_is_boolean(iu)) {
            rc = BAD("stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
            goto fail;
        }
        r->include_usage = iu && json_is_true(iu);
    }
    return 0;
fail:
    hy_oai_request_release(r);
    return rc;
}

void hy_oai_request_release(hy_oai_request *r) {
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->prompt_ids);
    free(r->bias_ids);
    free(r->bias_values);
    json_decref(r->root);
    hy_oai_kind k = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = k;
}

/* ---------------- responses ---------------- */

json_t *hy_oai_json_stringn(const char *s, size_t n) {
    if (hy_u8_valid(s, n)) return json_stringn(s, n);
    char *tmp = malloc(3 * n + 1);
    if (!tmp) return json_string("");
    size_t m = hy_u8_repair(s, n, tmp);
    json_t *j = json_stringn(tmp, m);
    free(tmp);
    return j;
}

char *hy_oai_dump(const json_t *j) { return json_dumps(j, JSON_COMPACT); }

int hy_oai_choice_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 64;
        while (nc < *len + n + 1) nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

void hy_oai_choice_release(hy_oai_choice *c) {
    free(c->content);
    free(c->reasoning);
    for (int i = 0; i < c->n_calls; i++) {
        free(c->calls[i].id);
        free(c->calls[i].name);
        free(c->calls[i].arguments);
    }
    free(c->calls);
    json_decref(c->logprobs);
    json_decref(c->stop_reason);
    memset(c, 0, sizeof *c);
}

static json_t *bytes_array(const char *s, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((unsigned char)s[i]));
    return a;
}

/* Logprobs may be -inf for impossible tokens; JSON has no infinity. */
static json_t *lp_value(float v) { return json_real(isfinite(v) ? (double)v : -9999.0); }

json_t *hy_oai_chat_logprob_entry(const hy_oai_token_lp *t) {
    json_t *e = json_object();
    json_object_set_new(e, "token", hy_oai_json_stringn(t->token, t->token_len));
    json_object_set_new(e, "logprob", lp_value(t->logprob));
    json_object_set_new(e, "bytes", bytes_array(t->token, t->token_len));
    json_t *tops = json_array();
    for (int i = 0; i < t->n_top; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "token", hy_oai_json_stringn(t->top[i].token, t->top[i].token_len));
        json_object_set_new(x, "logprob", lp_value(t->top[i].logprob));
        json_object_set_new(x, "bytes", bytes_array(t->top[i].token, t->top[i].token_len));
        json_array_append_new(tops, x);
    }
    json_object_set_new(e, "top_logprobs", tops);
    return e;
}

int hy_oai_completion_logprobs_add(json_t **obj, const hy_oai_token_lp *t, size_t text_offset) {
    if (!*obj) {
        *obj = json_object();
        json_object_set_new(*obj, "tokens", json_array());
        json_object_set_new(*obj, "token_logprobs", json_array());
        json_object_set_new(*obj, "top_logprobs", json_array());
        json_object_set_new(*obj, "text_offset", json_array());
    }
    json_array_append_new(json_object_get(*obj, "tokens"), hy_oai_json_stringn(t->token, t->token_len));
    json_array_append_new(json_object_get(*obj, "token_logprobs"), lp_value(t->logprob));
    json_t *top = json_object();
    for (int i = 0; i < t->n_top; i++) {
        json_t *k = hy_oai_json_stringn(t->top[i].token, t->top[i].token_len);
        /* two tokens can decode to the same text; keep the more likely (first) */
        if (!json_object_get(top, json_string_value(k))) json_object_set_new(top, json_string_value(k), lp_value(t->top[i].logprob));
        json_decref(k);
    }
    json_array_append_new(json_object_get(*obj, "top_logprobs"), top);
    json_array_append_new(json_object_get(*obj, "text_offset"), json_integer((json_int_t)text_offset));
    return 0;
}

json_t *hy_oai_usage_json(const hy_oai_usage *u) {
    json_t *j = json_object();
    json_object_set_new(j, "prompt_tokens", json_integer(u->prompt_tokens));
    json_object_set_new(j, "completion_tokens", json_integer(u->completion_tokens));
    json_object_set_new(j, "total_tokens", json_integer(u->prompt_tokens + u->completion_tokens));
    json_t *pd = json_object();
    json_object_set_new(pd, "cached_tokens", json_integer(u->cached_tokens));
    json_object_set_new(j, "prompt_tokens_details", pd);
    if (u->reasoning_tokens >= 0) {
        json_t *cd = json_object();
        json_object_set_new(cd, "reasoning_tokens", json_integer(u->reasoning_tokens));
        json_object_set_new(j, "completion_tokens_details", cd);
    }
    return j;
}

static json_t *head(const char *object, const char *id, long created, const char *model) {
    json_t *j = json_object();
    json_object_set_new(j, "id", json_string(id));
    json_object_set_new(j, "object", json_string(object));
    json_object_set_new(j, "created", json_integer(created));
    json_object_set_new(j, "model", hy_oai_json_stringn(model, strlen(model)));
    return j;
}

static json_t *finish_json(const hy_oai_choice *c) { return c->finish_reason ? json_string(c->finish_reason) : json_null(); }

json_t *hy_oai_chat_response(const char *id, long created, const char *model, const hy_oai_choice *ch, int n,
                             const hy_oai_usage *u) {
    json_t *j = head("chat.completion", id, created, model);
    json_t *choices = json_array();
    for (int i = 0; i < n; i++) {
        const hy_oai_choice *c = &ch[i];
        json_t *m = json_object();
        json_object_set_new(m, "role", json_string("assistant"));
        json_object_set_new(m, "content", c->content_len || !c->n_calls ? hy_oai_json_stringn(c->content ? c->content : "", c->content_len) : json_null());
        if (c->reasoning_len) {
            json_object_set_new(m, "reasoning_content", hy_oai_json_stringn(c->reasoning, c->reasoning_len));
            json_object_set_new(m, "reasoning", hy_oai_json_stringn(c->reasoning, c->reasoning_len));
        } else {
            json_object_set_new(m, "reasoning_content", json_null());
        }
        json_t *calls = json_array();
        for (int k = 0; k < c->n_calls; k++) {
            json_t *tc = json_object();
            json_object_set_new(tc, "id", json_string(c->calls[k].id));
            json_object_set_new(tc, "type", json_string("function"));
            json_t *fn = json_object();
            json_object_set_new(fn, "name", hy_oai_json_stringn(c->calls[k].name, strlen(c->calls[k].name)));
            json_object_set_new(fn, "arguments", hy_oai_json_stringn(c->calls[k].arguments, strlen(c->calls[k].arguments)));
            json_object_set_new(tc, "function", fn);
            json_array_append_new(calls, tc);
        }
        json_object_set_new(m, "tool_calls", calls);
        json_t *cj = json_object();
        json_object_set_new(cj, "index", json_integer(c->index));
        json_object_set_new(cj, "message", m);
        if (c->logprobs) {
            json_t *lp = json_object();
            json_object_set(lp, "content", c->logprobs);
            json_object_set_new(cj, "logprobs", lp);
        } else {
            json_object_set_new(cj, "logprobs", json_null());
        }
        json_object_set_new(cj, "finish_reason", finish_json(c));
        json_object_set(cj, "stop_reason", c->stop_reason ? c->stop_reason : json_null());
        json_array_append_new(choices, cj);
    }
    json_object_set_new(j, "choices", choices);
    json_object_set_new(j, "usage", hy_oai_usage_json(u));
    return j;
}

json_t *hy_oai_completion_response(const char *id, long created, const char *model, const hy_oai_choice *ch,
                                   int n, const hy_oai_usage *u) {
    json_t *j = head("text_completion", id, created, model);
    json_t *choices = json_array();
    for (int i = 0; i < n; i++) {
        const hy_oai_choice *c = &ch[i];
        json_t *cj = json_object();
        json_object_set_new(cj, "index", json_integer(c->index));
        json_object_set_new(cj, "text", hy_oai_json_stringn(c->content ? c->content : "", c->content_len));
        json_object_set(cj, "logprobs", c->logprobs ? c->logprobs : json_null());
        json_object_set_new(cj, "finish_reason", finish_json(c));
        json_object_set(cj, "stop_reason", c->stop_reason ? c->stop_reason : json_null());
        json_array_append_new(choices, cj);
    }
    json_object_set_new(j, "choices", choices);
    json_object_set_new(j, "usage", hy_oai_usage_json(u));
    return j;
}

json_t *hy_oai_chunk(hy_oai_kind kind, const char *id, long created, const char *model) {
    json_t *j = head(kind == HY_OAI_CHAT ? "chat.completion.chunk" : "text_completion", id, created, model);
    json_object_set_new(j, "choices", json_array());
    return j;
}
