/*
 * Fuzz target for chat/render: bytes -> JSON -> render must not crash or leak.
 * Input layout: byte 0 = options (bits 0-1 template, bit 2 generation prompt, bits 3-4
 * enable_thinking unset/false/true, bits 5-6 preserve_thinking, bit 7 vision ids), rest =
 * JSON: an array of messages, or an object {"messages": [...], "tools": [...]}.
 * A successful render must also keep its own promises: spans inside the text and
 * ordered, history_end <= len, markup ranges sorted, disjoint, non-empty and inside the text.
 */
#include "chat/render.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int tri(int v) { return v == 1 ? 0 : v == 2 ? 1 : HY_CHAT_UNSET; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t f = data[0];
    json_t *v = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!v) return 0;
    const json_t *messages = v, *tools = NULL;
    if (json_is_object(v)) {
        messages = json_object_get(v, "messages");
        tools = json_object_get(v, "tools");
    }
    hy_chat_render_opts o;
    hy_chat_render_opts_default(&o);
    o.tmpl = (hy_chat_template)((f & 3) % 3);
    o.add_generation_prompt = (f >> 2) & 1;
    o.enable_thinking = tri((f >> 3) & 3);
    o.preserve_thinking = tri((f >> 5) & 3);
    o.add_vision_id = (f >> 7) & 1;
    hy_chat_prompt p;
    hy_err e;
    if (messages && hy_chat_render(messages, tools, &o, &p, &e) == 0) {
        if (!p.text || p.history_end > p.len || p.n_messages != json_array_size(messages)) abort();
        for (size_t i = 0; i < p.n_messages; i++)
            if (p.messages[i].start > p.messages[i].end || p.messages[i].end > p.history_end) abort();
        for (size_t i = 0; i < p.n_markup; i++)
            if (p.markup[2 * i] >= p.markup[2 * i + 1] || p.markup[2 * i + 1] > p.len ||
                (i && p.markup[2 * i] <= p.markup[2 * i - 1]))
                abort();
        hy_chat_prompt_free(&p);
    }
    json_decref(v);
    return 0;
}
