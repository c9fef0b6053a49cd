/*
 * Fuzz target for chat/parse: random bytes as model output, fed in random pieces.
 * Input layout: byte 0 = flags (bit 0 thinking, bit 1 parse tool calls, bit 2 use the
 * built-in tools schema), byte 1 = split seed, rest = the output text.
 * Besides "no crash / no leak", it checks the parser's central promise: the result
 * (reasoning, content, tool calls) is the same whether the text arrives whole or in
 * pieces; a difference aborts.
 */
#include "chat/parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},\"x\":{\"type\":\"number\"},"
    "\"ok\":{\"type\":\"boolean\"},\"o\":{\"type\":\"object\"},\"a\":{\"type\":\"array\"},"
    "\"n\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"integer\"}]},\"t\":{\"type\":[\"integer\",\"null\"]}}}}}]";

static int same_str(const char *a, size_t al, const char *b, size_t bl) {
    if (!a || !b) return a == b;
    return al == bl && !memcmp(a, b, al);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t flags = data[0];
    uint32_t seed = data[1] * 2654435761u + 1;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    json_t *tools = (flags & 4) ? json_loads(TOOLS, 0, NULL) : NULL;
    hy_chat_parse_opts o = {.thinking = flags & 1, .parse_tool_calls = (flags >> 1) & 1, .tools = tools};

    hy_chat_parse_result whole;
    hy_err e;
    if (hy_chat_parse_text(text, len, &o, &whole, &e)) abort(); /* only OOM can fail */

    hy_chat_parse_result parts;
    memset(&parts, 0, sizeof parts);
    hy_chat_parser *p;
    if (hy_chat_parser_create(&o, hy_chat_parse_collect, &parts, &p, &e)) abort();
    for (size_t i = 0; i < len;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = 1 + (seed >> 16) % 7;
        if (k > len - i) k = len - i;
        if (hy_chat_parser_feed(p, text + i, k)) abort();
        i += k;
    }
    hy_chat_parse_summary s;
    if (hy_chat_parser_finish(p, &s)) abort();
    hy_chat_parser_free(p);

    if (!same_str(whole.reasoning, whole.reasoning_len, parts.reasoning, parts.reasoning_len)) abort();
    if (!same_str(whole.content, whole.content_len, parts.content, parts.content_len)) abort();
    size_t nc = parts.tool_calls ? json_array_size(parts.tool_calls) : 0;
    if (nc != json_array_size(whole.tool_calls) || nc != s.n_tool_calls) abort();
    for (size_t i = 0; i < nc; i++)
        if (!json_equal(json_array_get(whole.tool_calls, i), json_array_get(parts.tool_calls, i))) abort();
    hy_chat_parse_result_free(&whole);
    hy_chat_parse_result_free(&parts);
    json_decref(tools);
    return 0;
}
