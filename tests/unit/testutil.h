/* Shared helpers for cmocka unit tests: locating ../shared test data.
 * Include after <cmocka.h>. */
#ifndef TOKSCOPE_TESTUTIL_H
#define TOKSCOPE_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Path of a file under TOKSCOPE_TESTDATA (default ../shared), in a static buffer
 * rotated over 8 slots so a few can be alive at once. */
static inline const char *testdata_path(const char *rel)
{
    static char bufs[8][1024];
    static int slot;
    const char *root = getenv("TOKSCOPE_TESTDATA");
    if (!root || !*root)
        root = "../shared";
    char *b = bufs[slot++ & 7];
    snprintf(b, sizeof bufs[0], "%s/%s", root, rel);
    return b;
}

/* xorshift64 step: reproducible random numbers, each suite with its own
 * state and seed so that its data does not depend on the others. */
static inline uint64_t test_xorshift64(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* A float's bits, for bit-for-bit comparisons. */
static inline uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline int testdata_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

/* Returns the path when the file exists. When it does not: fails the test in
 * CI (CI=true), skips it elsewhere. */
#define TESTDATA_REQUIRE(rel)                                                                        \
    ({                                                                                               \
        const char *p_ = testdata_path(rel);                                                         \
        if (access(p_, R_OK) != 0) {                                                                 \
            if (testdata_in_ci())                                                                    \
                fail_msg("test data missing: %s (set TOKSCOPE_TESTDATA)", p_);                       \
            else {                                                                                   \
                print_message("test data missing, skipping: %s\n", p_);                              \
                skip();                                                                              \
            }                                                                                        \
        }                                                                                            \
        p_;                                                                                          \
    })

#endif
