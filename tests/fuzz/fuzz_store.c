/* Fuzz target: the conversation loader of /load (ui/store.c, store_load),
 * over an app without a terminal or an engine. What loads is saved, loaded
 * again into a second app and saved again: the two saves must be the same
 * bytes (nothing lost or changed by a round trip). store_load reads a path,
 * so the input goes through a memfd; store_save replaces a file atomically
 * (a temporary file beside it, then rename), so the saves go to a directory. */
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "store.h"
#include "ui.h"

static ui_app *new_app(void)
{
    ui_app *app = calloc(1, sizeof *app);
    FUZZ_CHECK(app, "out of memory");
    app->sp = sampler_default_params();
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_IDLE;
    snprintf(app->model_path, sizeof app->model_path, "/m.gguf");
    ui_new_conv(app, "");
    return app;
}

static void free_app(ui_app *app)
{
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    ui_overlay_close(app);
    free(app);
}

/* A memfd holding data; path receives its /proc name. */
static int memfd_with(const void *data, size_t size, char *path, size_t cap)
{
    int fd = memfd_create("fuzz_store", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create");
    FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    char *b = malloc((size_t)end + 1);
    rewind(f);
    FUZZ_CHECK(b && fread(b, 1, (size_t)end, f) == (size_t)end, "read back");
    fclose(f);
    *n = (size_t)end;
    return b;
}

static char dir[4096]; /* where the saves go, made once, removed at exit */

static void remove_dir(void)
{
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp");
    atexit(remove_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = memfd_with(data, size, path, sizeof path);
    ui_app *a = new_app();
    bool ok = store_load(a, path, err, sizeof err);
    close(fd);
    if (!ok) {
        FUZZ_CHECK(err[0], "load failed without a message");
        FUZZ_CHECK(a->n_convs == 1 && a->convs[0]->n_msgs == 0, "a failed load changed the conversations");
        free_app(a);
        return 0;
    }
    FUZZ_CHECK(a->n_convs >= 1 && a->cur < a->n_convs, "%zu conversations, current %zu", a->n_convs, a->cur);
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/1.json", dir);
    snprintf(p2, sizeof p2, "%s/2.json", dir);
    FUZZ_CHECK(store_save(a, p1, err, sizeof err), "save: %s", err);
    ui_app *b = new_app();
    FUZZ_CHECK(store_load(b, p1, err, sizeof err), "what was saved does not load: %s", err);
    FUZZ_CHECK(store_save(b, p2, err, sizeof err), "save: %s", err);
    size_t n1, n2;
    char *s1 = slurp(p1, &n1), *s2 = slurp(p2, &n2);
    FUZZ_CHECK(n1 == n2 && !memcmp(s1, s2, n1), "save, load, save changed the file (%zu -> %zu bytes)", n1,
               n2);
    free(s1);
    free(s2);
    unlink(p1);
    unlink(p2);
    free_app(a);
    free_app(b);
    return 0;
}
