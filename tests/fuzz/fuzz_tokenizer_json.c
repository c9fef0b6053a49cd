/*
 * Fuzz target: arbitrary bytes as a tokenizer.json. Loading must fail cleanly or succeed;
 * when it succeeds, encoding and decoding a fixed text must not crash.
 */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hy_tokenizer *t = NULL;
    hy_err err = {0};
    if (hy_tokenizer_load_json(&t, (const char *)data, size, NULL, 0, "fuzz", &err)) return 0;
    static const char k_text[] = "Hello, world! 你好 <|im_end|><think> 123\n\t  e\xcc\x81";
    int32_t *ids = NULL;
    size_t n = 0;
    if (hy_tokenizer_encode(t, k_text, sizeof k_text - 1, true, &ids, &n, &err)) abort();
    char *text = NULL;
    size_t tl = 0;
    if (hy_tokenizer_decode(t, ids, n, false, &text, &tl, &err)) abort();
    free(text);
    free(ids);
    hy_tokenizer_free(t);
    return 0;
}
