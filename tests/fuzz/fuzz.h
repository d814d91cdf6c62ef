/* Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c). Each target is
 * built twice: with clang's -fsanitize=fuzzer by `make fuzz`, and with the
 * project's compiler and replay.c's main() by `make test`, which replays the
 * seed and regression corpora through it. FUZZ_CHECK aborts, so the fuzzer
 * records the input as a crash. */
#ifndef TOKSCOPE_FUZZ_H
#define TOKSCOPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                                                \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            abort();                                                                                         \
        }                                                                                                    \
    } while (0)

#endif
