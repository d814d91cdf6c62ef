/* Model discovery for the picker: every searched location, GGUF magic for
 * extensionless ollama blobs, Hugging Face snapshot symlinks (listed once),
 * header fields (architecture, quantization), junk files ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "picker.h"
#include "testutil.h"

static char g_root[256];

static void mkdirs(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    for (char *s = p + strlen(g_root) + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void copy_to(const char *src, const char *rel)
{
    char dst[1024];
    snprintf(dst, sizeof dst, "%s/%s", g_root, rel);
    FILE *in = fopen(src, "rb");
    FILE *out = fopen(dst, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static void write_to(const char *rel, const char *text)
{
    char dst[1024];
    snprintf(dst, sizeof dst, "%s/%s", g_root, rel);
    FILE *f = fopen(dst, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const picker_entry *find(const picker_entry *e, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].name, name))
            return &e[i];
    return NULL;
}

static void test_scan_locations(void **state)
{
    (void)state;
    const char *stories = TESTDATA_REQUIRE("models/stories260K.gguf");
    const char *tiny = TESTDATA_REQUIRE("models/tiny-spm-q8_0.gguf");
    snprintf(g_root, sizeof g_root, "/tmp/tokscope-picker-XXXXXX");
    assert_non_null(mkdtemp(g_root));
    /* ~/models */
    mkdirs("home/models/sub");
    copy_to(stories, "home/models/sub/stories.gguf");
    write_to("home/models/fake.gguf", "not really a gguf file");
    /* Hugging Face: snapshot symlink -> blob */
    mkdirs("hf/hub/models--org--tiny/blobs");
    mkdirs("hf/hub/models--org--tiny/snapshots/abc123");
    copy_to(tiny, "hf/hub/models--org--tiny/blobs/0123456789abcdef");
    char link[1024];
    snprintf(link, sizeof link, "%s/hf/hub/models--org--tiny/snapshots/abc123/tiny-q8.gguf", g_root);
    assert_int_equal(symlink("../../blobs/0123456789abcdef", link), 0);
    /* LM Studio */
    mkdirs("home/.lmstudio/models/pub/repo");
    copy_to(stories, "home/.lmstudio/models/pub/repo/lm.gguf");
    /* ollama, via OLLAMA_MODELS: an extensionless GGUF blob and a JSON manifest blob */
    mkdirs("ollama/blobs");
    copy_to(tiny, "ollama/blobs/sha256-aaaa");
    write_to("ollama/blobs/sha256-bbbb", "{\"schemaVersion\": 2}");
    /* a configured directory */
    mkdirs("extra");
    copy_to(stories, "extra/configured.gguf");

    char home[512], hf[512], ol[512], extra[512];
    snprintf(home, sizeof home, "%s/home", g_root);
    snprintf(hf, sizeof hf, "%s/hf", g_root);
    snprintf(ol, sizeof ol, "%s/ollama", g_root);
    snprintf(extra, sizeof extra, "%s/extra", g_root);
    setenv("HOME", home, 1);
    setenv("HF_HOME", hf, 1);
    unsetenv("HF_HUB_CACHE");
    setenv("OLLAMA_MODELS", ol, 1);

    const char *extras[] = {extra};
    picker_dir dirs[32];
    size_t nd = picker_dirs(extras, 1, dirs, 32);
    assert_true(nd >= 6);
    assert_string_equal(dirs[0].path, extra);
    picker_entry *e;
    size_t n = picker_scan(dirs, nd, &e);

    const picker_entry *s = find(e, n, "stories.gguf");
    assert_non_null(s);
    assert_string_equal(s->arch, "llama");
    assert_string_equal(s->quant, "F32");
    assert_string_equal(s->source, "models");
    assert_true(s->size > 1000000);

    const picker_entry *t = find(e, n, "tiny-q8.gguf");
    assert_non_null(t);
    assert_string_equal(t->source, "huggingface");
    assert_string_equal(t->quant, "Q8_0");

    assert_non_null(find(e, n, "lm.gguf"));
    assert_string_equal(find(e, n, "lm.gguf")->source, "lmstudio");
    assert_non_null(find(e, n, "configured.gguf"));
    assert_string_equal(find(e, n, "configured.gguf")->source, "config");

    size_t n_ollama = 0;
    for (size_t i = 0; i < n; i++) {
        assert_null(strstr(e[i].path, "sha256-bbbb")); /* not GGUF */
        assert_null(strstr(e[i].path, "fake.gguf"));   /* .gguf name, wrong magic */
        if (!strcmp(e[i].source, "ollama")) {
            n_ollama++;
            assert_non_null(strstr(e[i].path, "sha256-aaaa"));
            assert_string_equal(e[i].quant, "Q8_0");
        }
    }
    assert_int_equal(n_ollama, 1);
    /* the HF blob is reachable as the snapshot link only: listed once */
    size_t n_tiny_hf = 0;
    for (size_t i = 0; i < n; i++)
        n_tiny_hf += strstr(e[i].path, "models--org--tiny") != NULL;
    assert_int_equal(n_tiny_hf, 1);
    assert_int_equal(n, 5);
    picker_free(e, n);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    assert_int_equal(system(cmd), 0);
}

static void test_scan_nothing(void **state)
{
    (void)state;
    picker_dir d = {.path = "/nonexistent/tokscope", .source = "models"};
    picker_entry *e = NULL;
    assert_int_equal(picker_scan(&d, 1, &e), 0);
    picker_free(e, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_locations),
        cmocka_unit_test(test_scan_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
