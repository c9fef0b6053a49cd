/*
 * Python text forms of JSON values (see pyjson.h): json.dumps, str()/repr(),
 * float repr, str.strip(), and a bounded ast.literal_eval subset.
 * Threading: reentrant, no state. Recursion is bounded by the depth of the
 * jansson value (the jansson parser caps it) or, for literal_eval, by
 * LIT_MAX_DEPTH.
 */
#include "chat/pyjson.h"

#include "hyla.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

size_t hy_pyjson_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t len;
    uint32_t c, min;
    if ((u[0] & 0xe0) == 0xc0) {
        len = 2, c = u[0] & 0x1f, min = 0x80;
    } else if ((u[0] & 0xf0) == 0xe0) {
        len = 3, c = u[0] & 0x0f, min = 0x800;
    } else if ((u[0] & 0xf8) == 0xf0) {
        len = 4, c = u[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (u[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

static int put_utf8(hy_chat_buf *b, uint32_t c) {
    char t[4];
    size_t n;
    if (c < 0x80) {
        t[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        t[0] = (char)(0xc0 | (c >> 6)), t[1] = (char)(0x80 | (c & 0x3f)), n = 2;
    } else if (c < 0x10000) {
        t[0] = (char)(0xe0 | (c >> 12)), t[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        t[2] = (char)(0x80 | (c & 0x3f)), n = 3;
    } else {
        t[0] = (char)(0xf0 | (c >> 18)), t[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((c >> 6) & 0x3f)), t[3] = (char)(0x80 | (c & 0x3f)), n = 4;
    }
    return hy_chat_buf_put(b, t, n);
}

int hy_utf8_append_lossy(hy_chat_buf *b, const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t l = hy_pyjson_utf8_decode(s + i, n - i, &cp);
        if (l) {
            hy_chat_buf_put(b, s + i, l);
            i += l;
        } else {
            hy_chat_buf_put(b, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    return b->oom ? HY_E_NOMEM : 0;
}

json_t *hy_pyjson_string_lossy(const char *s, size_t n) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        size_t l = hy_pyjson_utf8_decode(s + i, n - i, &cp);
        if (!l) break;
        i += l;
    }
    if (i == n) return json_stringn(s, n);
    hy_chat_buf b;
    hy_chat_buf_init(&b);
    json_t *r = hy_utf8_append_lossy(&b, s, n) ? NULL : json_stringn(b.p, b.len);
    hy_chat_buf_free(&b);
    return r;
}

/* Python's _PyUnicode_IsWhitespace: bidi class WS/B/S or category Zs. */
int hy_py_isspace(uint32_t c) {
    if (c >= 0x09 && c <= 0x0d) return 1;
    if (c >= 0x1c && c <= 0x20) return 1;
    switch (c) {
    case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029: case 0x202f: case 0x205f:
    case 0x3000:
        return 1;
    default:
        return c >= 0x2000 && c <= 0x200a;
    }
}

void hy_py_strip(const char *s, size_t n, size_t *b, size_t *e) {
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t l = hy_pyjson_utf8_decode(s + i, n - i, &c);
        if (!l || !hy_py_isspace(c)) break;
        i += l;
    }
    /* Walk forward remembering the end of the last non-space character: UTF-8 cannot be
     * decoded backwards safely when it may be invalid. */
    size_t end = i, j = i;
    while (j < n) {
        uint32_t c;
        size_t l = hy_pyjson_utf8_decode(s + j, n - j, &c);
        if (!l) {
            j++;
            end = j;
            continue;
        }
        j += l;
        if (!hy_py_isspace(c)) end = j;
    }
    *b = i;
    *e = end;
}

void hy_pyjson_float_repr(double d, char out[40]) {
    if (isnan(d)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(d)) {
        strcpy(out, d < 0 ? "-inf" : "inf");
        return;
    }
    if (d == 0) {
        strcpy(out, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    /* Shortest digit string that reads back exactly; "%.*e" is correctly rounded, so the
     * first precision that round-trips gives Python's (David Gay's) shortest repr digits. */
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    const char *p = tmp;
    char *o = out;
    if (*p == '-') *o++ = *p++;
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp10 = atoi(p + 1);
    int decpt = exp10 + 1; /* value = 0.DIGITS * 10^decpt */
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            *o++ = '0', *o++ = '.';
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            for (int i = 0; i < nd; i++) *o++ = digits[i];
        } else if (decpt >= nd) {
            for (int i = 0; i < nd; i++) *o++ = digits[i];
            for (int i = nd; i < decpt; i++) *o++ = '0';
            *o++ = '.', *o++ = '0';
        } else {
            for (int i = 0; i < decpt; i++) *o++ = digits[i];
            *o++ = '.';
            for (int i = decpt; i < nd; i++) *o++ = digits[i];
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = digits[i];
        }
        snprintf(o, 16, "e%c%02d", exp10 < 0 ? (int)'-' : (int)'+', abs(exp10) % 1000);
    }
}

/* json.dumps string: escapes " \ \b \f \n \r \t and other C0 controls as \u00XX; everything
 * else (including DEL and non-ASCII) verbatim because ensure_ascii=False. */
static int dumps_string(hy_chat_buf *b, const char *s, size_t n) {
    hy_chat_buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
                esc = ubuf;
            }
        }
        if (esc) {
            hy_chat_buf_put(b, s + run, i - run);
            hy_chat_buf_puts(b, esc);
            run = i + 1;
        }
    }
    hy_chat_buf_put(b, s + run, n - run);
    return hy_chat_buf_putc(b, '"');
}

int hy_pyjson_dumps(hy_chat_buf *b, const json_t *v) {
    char num[40];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        hy_chat_buf_putc(b, '{');
        int first = 1;
        for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
            const char *k = json_object_iter_key(it);
            json_t *x = json_object_iter_value(it);
            if (!first) hy_chat_buf_put(b, ", ", 2);
            first = 0;
            dumps_string(b, k, json_object_iter_key_len(it));
            hy_chat_buf_put(b, ": ", 2);
            int rc = hy_pyjson_dumps(b, x);
            if (rc) return rc;
        }
        return hy_chat_buf_putc(b, '}');
    }
    case JSON_ARRAY: {
        hy_chat_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) hy_chat_buf_put(b, ", ", 2);
            int rc = hy_pyjson_dumps(b, json_array_get(v, i));
            if (rc) return rc;
        }
        return hy_chat_buf_putc(b, ']');
    }
    case JSON_STRING:
        return dumps_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return hy_chat_buf_puts(b, num);
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d)) return HY_E_INVALID;
        hy_pyjson_float_repr(d, num);
        return hy_chat_buf_puts(b, num);
    }
    case JSON_TRUE: return hy_chat_buf_puts(b, "true");
    case JSON_FALSE: return hy_chat_buf_puts(b, "false");
    case JSON_NULL: return hy_chat_buf_puts(b, "null");
    }
    return HY_E_INVALID;
}

/* Python str.isprintable() for one code point (used by repr). */
static int py_isprintable(uint32_t c) {
    if (c == ' ') return 1;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
        return 0;
    default:
        return 1;
    }
}

/* repr(str): quote choice and escapes as CPython's unicode_repr. */
static int repr_string(hy_chat_buf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    hy_chat_buf_putc(b, q);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = hy_pyjson_utf8_decode(s + i, n - i, &c);
        char e[16];
        if (!l) { /* cannot come from a valid JSON string; keep bytes as \x escapes */
            snprintf(e, sizeof e, "\\x%02x", (unsigned char)s[i]);
            hy_chat_buf_puts(b, e);
            i++;
            continue;
        }
        if (c == (uint32_t)q || c == '\\') {
            hy_chat_buf_putc(b, '\\');
            hy_chat_buf_putc(b, (char)c);
        } else if (c == '\t') {
            hy_chat_buf_puts(b, "\\t");
        } else if (c == '\n') {
            hy_chat_buf_puts(b, "\\n");
        } else if (c == '\r') {
            hy_chat_buf_puts(b, "\\r");
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(e, sizeof e, "\\x%02x", c);
            hy_chat_buf_puts(b, e);
        } else if (c < 0x7f || py_isprintable(c)) {
            hy_chat_buf_put(b, s + i, l);
        } else {
            if (c <= 0xff) snprintf(e, sizeof e, "\\x%02x", c);
            else if (c <= 0xffff) snprintf(e, sizeof e, "\\u%04x", c);
            else snprintf(e, sizeof e, "\\U%08x", c);
            hy_chat_buf_puts(b, e);
        }
        i += l;
    }
    return hy_chat_buf_putc(b, q);
}

static int py_repr(hy_chat_buf *b, const json_t *v, int top) {
    char num[40];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        hy_chat_buf_putc(b, '{');
        int first = 1;
        for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
            if (!first) hy_chat_buf_put(b, ", ", 2);
            first = 0;
            repr_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
            hy_chat_buf_put(b, ": ", 2);
            py_repr(b, json_object_iter_value(it), 0);
        }
        return hy_chat_buf_putc(b, '}');
    }
    case JSON_ARRAY:
        hy_chat_buf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) hy_chat_buf_put(b, ", ", 2);
            py_repr(b, json_array_get(v, i), 0);
        }
        return hy_chat_buf_putc(b, ']');
    case JSON_STRING:
        if (top) return hy_chat_buf_put(b, json_string_value(v), json_string_length(v));
        return repr_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return hy_chat_buf_puts(b, num);
    case JSON_REAL:
        hy_pyjson_float_repr(json_real_value(v), num);
        return hy_chat_buf_puts(b, num);
    case JSON_TRUE: return hy_chat_buf_puts(b, "True");
    case JSON_FALSE: return hy_chat_buf_puts(b, "False");
    case JSON_NULL: return hy_chat_buf_puts(b, "None");
    }
    return HY_E_INVALID;
}

int hy_pyjson_str(hy_chat_buf *b, const json_t *v) {
    py_repr(b, v, 1);
    return b->oom ? HY_E_NOMEM : 0;
}

/* ---- ast.literal_eval subset ---------------------------------------------------- */

#define LIT_MAX_DEPTH 64

typedef struct lit {
    const char *s;
    size_t n, i;
} lit;

static void lit_ws(lit *p) {
    for (;;) {
        while (p->i < p->n && strchr(" \t\r\n\f\v", p->s[p->i]) && p->s[p->i]) p->i++;
        if (p->i < p->n && p->s[p->i] == '#') {
            while (p->i < p->n && p->s[p->i] != '\n') p->i++;
            continue;
        }
        if (p->i + 1 < p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == '\n') {
            p->i += 2;
            continue;
        }
        return;
    }
}

static int lit_peek(lit *p) { return p->i < p->n ? (unsigned char)p->s[p->i] : -1; }

static int is_ident(int c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static json_t *lit_value(lit *p, int depth);

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One quoted string body starting at the opening quote; appends to b. */
static int lit_string_piece(lit *p, hy_chat_buf *b, int raw) {
    char q = p->s[p->i];
    int triple = p->i + 2 < p->n && p->s[p->i + 1] == q && p->s[p->i + 2] == q;
    p->i += triple ? 3 : 1;
    for (;;) {
        if (p->i >= p->n) return -1;
        char c = p->s[p->i];
        if (c == q) {
            if (!triple) {
                p->i++;
                return 0;
            }
            if (p->i + 2 < p->n && p->s[p->i + 1] == q && p->s[p->i + 2] == q) {
                p->i += 3;
                return 0;
            }
        }
        if (c == '\n' && !triple) return -1;
        if (c != '\\') {
            hy_chat_buf_putc(b, c);
            p->i++;
            continue;
        }
        if (p->i + 1 >= p->n) return -1;
        char e = p->s[p->i + 1];
        if (raw) { /* raw strings keep the backslash; it still protects a quote */
            hy_chat_buf_putc(b, '\\');
            hy_chat_buf_putc(b, e);
            p->i += 2;
            continue;
        }
        p->i += 2;
        uint32_t cp;
        int nh = 0;
        switch (e) {
        case '\n': continue;
        case '\\': hy_chat_buf_putc(b, '\\'); continue;
        case '\'': hy_chat_buf_putc(b, '\''); continue;
        case '"': hy_chat_buf_putc(b, '"'); continue;
        case 'a': hy_chat_buf_putc(b, '\a'); continue;
        case 'b': hy_chat_buf_putc(b, '\b'); continue;
        case 'f': hy_chat_buf_putc(b, '\f'); continue;
        case 'n': hy_chat_buf_putc(b, '\n'); continue;
        case 'r': hy_chat_buf_putc(b, '\r'); continue;
        case 't': hy_chat_buf_putc(b, '\t'); continue;
        case 'v': hy_chat_buf_putc(b, '\v'); continue;
        case 'x': nh = 2; break;
        case 'u': nh = 4; break;
        case 'U': nh = 8; break;
        case 'N': return -1;
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(p->s[p->i++] - '0');
                if (put_utf8(b, cp)) return -1;
                continue;
            }
            hy_chat_buf_putc(b, '\\'); /* unknown escape: kept as written */
            hy_chat_buf_putc(b, e);
            continue;
        }
        cp = 0;
        for (int k = 0; k < nh; k++) {
            int h = p->i < p->n ? hexval((unsigned char)p->s[p->i]) : -1;
            if (h < 0) return -1;
            cp = cp * 16 + (uint32_t)h;
            p->i++;
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
        if (put_utf8(b, cp)) return -1;
    }
}

/* A string literal, possibly several adjacent ones ("a" 'b' -> "ab"). */
static json_t *lit_string(lit *p) {
    hy_chat_buf b;
    hy_chat_buf_init(&b);
    int any = 0;
    for (;;) {
        lit_ws(p);
        size_t save = p->i;
        int raw = 0;
        while (p->i < p->n && strchr("rRuU", p->s[p->i]) && p->s[p->i]) {
            if (p->s[p->i] == 'r' || p->s[p->i] == 'R') raw = 1;
            p->i++;
        }
        if (p->i - save > 1 || (p->i < p->n && p->s[p->i] != '\'' && p->s[p->i] != '"') || p->i >= p->n) {
            p->i = save;
            break;
        }
        if (lit_string_piece(p, &b, raw)) {
            hy_chat_buf_free(&b);
            return NULL;
        }
        any = 1;
    }
    json_t *r = NULL;
    if (any && !b.oom) r = json_stringn(b.p ? b.p : "", b.len);
    hy_chat_buf_free(&b);
    return r;
}

static json_t *lit_number(lit *p, int neg) {
    char tmp[128];
    size_t k = 0;
    int is_float = 0, base = 10;
    size_t i = p->i;
    if (i + 1 < p->n && p->s[i] == '0' && strchr("xXoObB", p->s[i + 1]) && p->s[i + 1]) {
        char t = (char)(p->s[i + 1] | 0x20);
        base = t == 'x' ? 16 : t == 'o' ? 8 : 2;
        i += 2;
    }
    for (; i < p->n; i++) {
        char c = p->s[i];
        if (c == '_') {
            if (k == 0 || i + 1 >= p->n || !(hexval((unsigned char)p->s[i + 1]) >= 0)) return NULL;
            continue;
        }
        int digit = base == 16 ? hexval((unsigned char)c) >= 0 : (c >= '0' && c <= '0' + (base == 10 ? 9 : base - 1));
        if (!digit) {
            if (base == 10 && (c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && k && (tmp[k - 1] | 0x20) == 'e'))) {
                is_float = 1;
            } else {
                break;
            }
        }
        if (k + 1 >= sizeof tmp) return NULL;
        tmp[k++] = c;
    }
    if (k == 0 || (i < p->n && (is_ident((unsigned char)p->s[i]) || p->s[i] == '.'))) return NULL;
    tmp[k] = 0;
    p->i = i;
    char *end;
    if (is_float) {
        if (!strcmp(tmp, ".")) return NULL;
        double d = strtod(tmp, &end);
        if (*end || !isfinite(d)) return NULL;
        return json_real(neg ? -d : d);
    }
    if (base == 10 && k > 1 && tmp[0] == '0') { /* Python rejects 012 but accepts 000 */
        for (size_t j = 0; j < k; j++)
            if (tmp[j] != '0') return NULL;
    }
    errno = 0;
    unsigned long long u = strtoull(tmp, &end, base);
    if (*end || errno) return NULL;
    if (neg ? u > (unsigned long long)LLONG_MAX + 1ULL : u > (unsigned long long)LLONG_MAX) return NULL;
    long long vll = neg ? (long long)(0ULL - u) : (long long)u;
    return json_integer(vll);
}

/* Items of [..], (..) or {..}; close is the closing bracket. */
static json_t *lit_container(lit *p, char close, int depth) {
    int is_dict = close == '}';
    json_t *out = is_dict ? json_object() : json_array();
    size_t n_items = 0;
    int trailing_comma = 0;
    if (!out) return NULL;
    p->i++;
    for (;;) {
        lit_ws(p);
        if (lit_peek(p) == close) {
            p->i++;
            break;
        }
        if (n_items && !trailing_comma) goto fail;
        json_t *v = lit_value(p, depth + 1);
        if (!v) goto fail;
        if (is_dict) {
            lit_ws(p);
            if (lit_peek(p) != ':') {
                json_decref(v);
                goto fail;
            }
            p->i++;
            json_t *val = lit_value(p, depth + 1);
            if (!val) {
                json_decref(v);
                goto fail;
            }
            /* json.dumps turns scalar keys into strings; other keys make it fail. */
            hy_chat_buf kb;
            hy_chat_buf_init(&kb);
            int ok = 1;
            if (json_is_string(v)) hy_chat_buf_put(&kb, json_string_value(v), json_string_length(v));
            else if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v) || json_is_null(v)) hy_pyjson_dumps(&kb, v);
            else ok = 0;
            json_decref(v);
            if (!ok || kb.oom) {
                json_decref(val);
                hy_chat_buf_free(&kb);
                goto fail;
            }
            /* setn_new takes val's reference even when it fails */
            int rc = json_object_setn_new(out, kb.p ? kb.p : "", kb.len, val);
            hy_chat_buf_free(&kb);
            if (rc) goto fail;
        } else if (json_array_append_new(out, v)) {
            goto fail;
        }
        n_items++;
        lit_ws(p);
        trailing_comma = 0;
        if (lit_peek(p) == ',') {
            p->i++;
            trailing_comma = 1;
        }
    }
    if (close == ')' && n_items == 1 && !trailing_comma) { /* (x) is x, not a tuple */
        json_t *x = json_incref(json_array_get(out, 0));
        json_decref(out);
        return x;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static json_t *lit_value(lit *p, int depth) {
    if (depth > LIT_MAX_DEPTH) return NULL;
    lit_ws(p);
    int c = lit_peek(p);
    if (c < 0) return NULL;
    if (c == '[') return lit_container(p, ']', depth);
    if (c == '(') return lit_container(p, ')', depth);
    if (c == '{') {
        /* A set ({1, 2}) is not JSON; lit_container rejects it because ':' is missing. */
        return lit_container(p, '}', depth);
    }
    if (c == '\'' || c == '"') return lit_string(p);
    if (c == '+' || c == '-') {
        p->i++;
        lit_ws(p);
        int d = lit_peek(p);
        if (!((d >= '0' && d <= '9') || d == '.')) return NULL;
        return lit_number(p, c == '-');
    }
    if ((c >= '0' && c <= '9') || c == '.') return lit_number(p, 0);
    if (is_ident(c)) {
        size_t s = p->i;
        while (p->i < p->n && is_ident((unsigned char)p->s[p->i])) p->i++;
        size_t l = p->i - s;
        if (p->i < p->n && (p->s[p->i] == '\'' || p->s[p->i] == '"') && l <= 2) {
            p->i = s; /* string prefix such as r'..' */
            return lit_string(p);
        }
        if (l == 4 && !memcmp(p->s + s, "None", 4)) return json_null();
        if (l == 4 && !memcmp(p->s + s, "True", 4)) return json_true();
        if (l == 5 && !memcmp(p->s + s, "False", 5)) return json_false();
    }
    return NULL;
}

json_t *hy_pyjson_literal_eval(const char *s, size_t n) {
    lit p = {s, n, 0};
    if (memchr(s, 0, n)) return NULL; /* Python refuses source with NUL bytes */
    json_t *v = lit_value(&p, 0);
    if (!v) return NULL;
    lit_ws(&p);
    if (p.i != p.n) {
        json_decref(v);
        return NULL;
    }
    return v;
}
