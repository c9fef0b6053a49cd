/* Helpers shared by the C tests: fixture paths, file loading, float comparison. */
#ifndef HY_TEST_UTIL_H
#define HY_TEST_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* 1 in sanitizer builds (make asan: unoptimised, ~50x slower), where the model tests scale
 * their workloads down: that build looks for memory errors, the normal build checks the
 * numerics at full size. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HY_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HY_TEST_SANITIZED 1
#endif
#endif
#ifndef HY_TEST_SANITIZED
#define HY_TEST_SANITIZED 0
#endif

/* $HYLA_DATA_DIR (set by CTest) joined with rel; static buffer per call site is not
 * used: the result is malloc'd, caller frees. */
char *hy_test_data_path(const char *rel);
/* Reads a whole file; returns malloc'd bytes (NUL-terminated) or NULL. */
unsigned char *hy_test_read_file(const char *path, size_t *len);
/* max |a[i]-b[i]| over n floats (NaN anywhere -> INFINITY). */
double hy_test_max_abs_diff(const float *a, const float *b, size_t n);
/* The CPU kernel tiers a model test should run: just $HYLA_ISA when it names one, else every
 * tier this build has and this CPU runs ("ref" first). Fills names (static strings), returns
 * the count (>= 1). */
int hy_test_isa_tiers(const char *names[], int cap);
/* A JSON array of integers (golden manifests' "ids", "tokens") as a malloc'd int32 array of
 * *n entries (non-NULL even when empty); caller frees. */
int32_t *hy_test_json_ids(const json_t *arr, int *n);
/* Index of the largest of n floats (the first one on ties). */
int hy_test_argmax(const float *x, int n);

#endif
