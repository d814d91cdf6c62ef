/* No model tokscope loads before the qwen35 branch has recurrent layers:
 * the recurrent-state API answers "none" (memory_rs_stub.h). */
#include "memory/memory_rs_stub.h"

bool forward_is_recurrent(const forward_ctx *f)
{
    (void)f;
    return false;
}

size_t forward_rs_bytes(const forward_ctx *f)
{
    (void)f;
    return 0;
}

int32_t forward_rs_pos(const forward_ctx *f)
{
    (void)f;
    return 0;
}

void forward_rs_save(const forward_ctx *f, void *dst) { (void)f, (void)dst; }

void forward_rs_load(forward_ctx *f, const void *src, int32_t pos) { (void)f, (void)src, (void)pos; }

void forward_rs_reset(forward_ctx *f) { (void)f; }
