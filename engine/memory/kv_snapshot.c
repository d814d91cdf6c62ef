/* A snapshot of the engine's memory on disk (kv_snapshot.h).
 *
 * Layout (little-endian, this build's only: the stamp names its kernels):
 *   header (HDR_LEN bytes): magic, version, the stamp, the memory's counters,
 *     the KV bytes and the file's total size
 *   tokens[n_past]; recurrent: call_start[n_past], call_end[n_past]
 *   logits[n_vocab] when logits_pos >= 0; anchor[n_vocab] when anchor_pos >= 0
 *   recurrent: the live state (rs_bytes) when rs_pos >= 0;
 *     per checkpoint: pos, state (rs_bytes), logits[n_vocab]
 *   the KV cache's rows [0, n_past) (forward_kv_pieces), in its own type
 *   SHA-256 of everything before it (32 bytes)
 * The file is read twice when restored: once whole to check its size and
 * checksum (and the stamp), then into the memory, so a file that is
 * refused leaves the memory as it was. */
#include "memory/kv_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "memory/memory_seq.h"

#define KV_MAGIC "TOKSKV\r\n" /* a text-mode transfer that mangles line ends shows at once */
#define KV_VERSION 1u
#define HDR_LEN 256
#define KV_HASH_LEN 32
#define KV_SAMPLE 4096 /* bytes of each tensor's data in the model's identity */

/* The SIMD kernels the forward pass was compiled with: another set rounds differently. */
static const char *build_isa(void)
{
    return "x86-64"
#ifdef __AVX2__
           " avx2"
#endif
#ifdef __FMA__
           " fma"
#endif
#ifdef __F16C__
           " f16c"
#endif
#ifdef __AVX512F__
           " avx512f"
#endif
#ifdef __AVX512BW__
           " avx512bw"
#endif
#ifdef __AVX512VL__
           " avx512vl"
#endif
#ifdef __AVX512VNNI__
           " avx512vnni"
#endif
#ifdef __AVX512BF16__
           " avx512bf16"
#endif
#ifdef __aarch64__
           " aarch64"
#endif
        ;
}

void kv_stamp_make(kv_stamp *st, const model *m, const forward_ctx *f, const memory *mem)
{
    memset(st, 0, sizeof *st);
    const gguf_ctx *g = model_get_gguf(m);
    st->model_size = gguf_file_size(g);
    /* The header, metadata and tensor table, then the start of
     * every tensor's data: a requantized, rescaled or other model changes
     * them; reading all the weights would cost seconds for what is meant to
     * save them. */
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    if (h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1) {
        const int64_t nt = gguf_n_tensors(g);
        const gguf_tensor *t0 = nt > 0 ? gguf_tensor_at(g, 0) : NULL;
        if (t0)
            EVP_DigestUpdate(h, gguf_file_bytes(g), gguf_data_offset(g));
        for (int64_t i = 0; i < nt; i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            EVP_DigestUpdate(h, t->data, t->nbytes < KV_SAMPLE ? t->nbytes : KV_SAMPLE);
        }
        unsigned int n = 0;
        EVP_DigestFinal_ex(h, st->model_hash, &n);
    }
    EVP_MD_CTX_free(h);
    forward_bits_settings(f, &st->bits);
    snprintf(st->isa, sizeof st->isa, "%s", build_isa());
    st->n_vocab = mem->n_vocab;
    st->rs_bytes = mem->recurrent ? mem->rs_bytes : 0;
}

bool kv_snapshot_path(const char *session, char *out, size_t cap)
{
    size_t l = strlen(session);
    if (l >= 5 && !strcmp(session + l - 5, ".json"))
        l -= 5;
    return snprintf(out, cap, "%.*s.kv", (int)l, session) < (int)cap;
}

/* ---- the header ---- */

typedef struct kv_header {
    kv_stamp st;
    int32_t n_past, logits_pos, anchor_pos, rs_pos, n_ckpt;
    uint32_t recurrent;
    uint64_t kv_bytes, total;
} kv_header;

static void put(uint8_t **p, const void *v, size_t n)
{
    memcpy(*p, v, n);
    *p += n;
}
static void get(const uint8_t **p, void *v, size_t n)
{
    memcpy(v, *p, n);
    *p += n;
}

static void header_encode(const kv_header *hd, uint8_t *buf)
{
    memset(buf, 0, HDR_LEN);
    uint8_t *p = buf;
    const uint32_t ver = KV_VERSION;
    put(&p, KV_MAGIC, 8);
    put(&p, &ver, 4);
    put(&p, &hd->st.model_size, 8);
    put(&p, hd->st.model_hash, 32);
    put(&p, &hd->st.bits.n_ctx, 4);
    put(&p, &hd->st.bits.n_batch, 4);
    put(&p, &hd->st.bits.n_threads, 4);
    put(&p, &hd->st.bits.kv_type, 4);
    put(&p, &hd->st.bits.v_type, 4);
    put(&p, &hd->st.bits.blas, 4);
    put(&p, &hd->st.bits.rot_k, 4);
    put(&p, &hd->st.bits.rot_v, 4);
    put(&p, hd->st.isa, 96);
    put(&p, &hd->st.n_vocab, 4);
    put(&p, &hd->st.rs_bytes, 8);
    put(&p, &hd->n_past, 4);
    put(&p, &hd->logits_pos, 4);
    put(&p, &hd->anchor_pos, 4);
    put(&p, &hd->rs_pos, 4);
    put(&p, &hd->n_ckpt, 4);
    put(&p, &hd->recurrent, 4);
    put(&p, &hd->kv_bytes, 8);
    put(&p, &hd->total, 8);
}

/* false: not a snapshot of this version */
static bool header_decode(const uint8_t *buf, kv_header *hd)
{
    memset(hd, 0, sizeof *hd);
    const uint8_t *p = buf;
    char magic[8];
    uint32_t ver;
    get(&p, magic, 8);
    get(&p, &ver, 4);
    if (memcmp(magic, KV_MAGIC, 8) != 0 || ver != KV_VERSION)
        return false;
    get(&p, &hd->st.model_size, 8);
    get(&p, hd->st.model_hash, 32);
    get(&p, &hd->st.bits.n_ctx, 4);
    get(&p, &hd->st.bits.n_batch, 4);
    get(&p, &hd->st.bits.n_threads, 4);
    get(&p, &hd->st.bits.kv_type, 4);
    get(&p, &hd->st.bits.v_type, 4);
    get(&p, &hd->st.bits.blas, 4);
    get(&p, &hd->st.bits.rot_k, 4);
    get(&p, &hd->st.bits.rot_v, 4);
    get(&p, hd->st.isa, 96);
    hd->st.isa[95] = 0;
    get(&p, &hd->st.n_vocab, 4);
    get(&p, &hd->st.rs_bytes, 8);
    get(&p, &hd->n_past, 4);
    get(&p, &hd->logits_pos, 4);
    get(&p, &hd->anchor_pos, 4);
    get(&p, &hd->rs_pos, 4);
    get(&p, &hd->n_ckpt, 4);
    get(&p, &hd->recurrent, 4);
    get(&p, &hd->kv_bytes, 8);
    get(&p, &hd->total, 8);
    return true;
}

/* Bytes of the body a header describes, and with the header and checksum
 * the file's (0 when the counts are out of range: no overflow below). */
static uint64_t total_of(const kv_header *hd)
{
    if (hd->n_past < 0 || hd->n_past > (1 << 26) || hd->n_ckpt < 0 || hd->n_ckpt > (1 << 20) ||
        hd->st.n_vocab <= 0 || hd->st.n_vocab > (1 << 26) || hd->st.rs_bytes > ((uint64_t)1 << 40) ||
        hd->kv_bytes > ((uint64_t)1 << 50))
        return 0;
    const uint64_t nv = (uint64_t)hd->st.n_vocab * sizeof(float), np = (uint64_t)hd->n_past * 4;
    uint64_t t = HDR_LEN + np + (hd->recurrent ? 2 * np : 0);
    t += (hd->logits_pos >= 0 ? nv : 0) + (hd->anchor_pos >= 0 ? nv : 0);
    if (hd->recurrent)
        t += (hd->rs_pos >= 0 ? hd->st.rs_bytes : 0) + (uint64_t)hd->n_ckpt * (4 + hd->st.rs_bytes + nv);
    return t + hd->kv_bytes + KV_HASH_LEN;
}

/* Whether the live state holds [0, rs_pos) of the tokens held (memory.c's live_ok). */
static int32_t live_pos(const memory *m)
{
    if (!m->recurrent)
        return -1;
    const int32_t r = forward_rs_pos(m->f);
    return r >= 0 && r <= m->n_past && (r == 0 || m->call_end[r - 1] == r) ? r : -1;
}

static void header_of(const memory *m, const kv_stamp *st, kv_header *hd)
{
    memset(hd, 0, sizeof *hd);
    hd->st = *st;
    hd->n_past = m->n_past;
    hd->logits_pos = m->logits_pos;
    hd->anchor_pos = m->anchor_pos;
    hd->rs_pos = live_pos(m);
    hd->n_ckpt = m->recurrent ? m->n_ckpt : 0;
    hd->recurrent = m->recurrent;
    hd->kv_bytes = forward_kv_pieces(m->f, m->n_past, NULL, NULL);
    hd->total = total_of(hd);
}

uint64_t kv_snapshot_bytes(const memory *m)
{
    kv_stamp st;
    memset(&st, 0, sizeof st);
    st.n_vocab = m->n_vocab;
    st.rs_bytes = m->recurrent ? m->rs_bytes : 0;
    kv_header hd;
    header_of(m, &st, &hd);
    return hd.total;
}

/* ---- writing ---- */

typedef struct kv_writer {
    FILE *fp;
    EVP_MD_CTX *h;
    bool ok;
} kv_writer;

static bool w_put(void *user, void *bytes, size_t len)
{
    kv_writer *w = user;
    if (w->ok && len)
        w->ok = EVP_DigestUpdate(w->h, bytes, len) == 1 && fwrite(bytes, 1, len, w->fp) == len;
    return w->ok;
}

static bool w_putc(kv_writer *w, const void *bytes, size_t len)
{
    return w_put(w, (void *)bytes, len);
}

/* The parts after the header: a memory's (kv_snapshot_save) or one
 * sequence's (kv_snapshot_save_seq). */
typedef bool (*body_fn)(kv_writer *w, const kv_header *hd, const void *src);

static bool body_mem(kv_writer *w, const kv_header *hd, const void *src)
{
    const memory *m = src;
    const size_t nv = (size_t)m->n_vocab * sizeof(float), np = (size_t)m->n_past * sizeof(int32_t);
    w_putc(w, m->tokens, np);
    if (hd->recurrent) {
        w_putc(w, m->call_start, np);
        w_putc(w, m->call_end, np);
    }
    if (hd->logits_pos >= 0)
        w_putc(w, m->logits, nv);
    if (hd->anchor_pos >= 0)
        w_putc(w, m->anchor, nv);
    if (hd->recurrent) {
        void *state = malloc(m->rs_bytes ? m->rs_bytes : 1);
        if (!state)
            w->ok = false;
        if (w->ok && hd->rs_pos >= 0) {
            forward_rs_save(m->f, state);
            w_putc(w, state, m->rs_bytes);
        }
        free(state);
        for (int32_t i = 0; w->ok && i < hd->n_ckpt; i++) {
            w_putc(w, &m->ckpt[i].pos, 4);
            w_putc(w, m->ckpt[i].state, m->rs_bytes);
            w_putc(w, m->ckpt[i].logits, nv);
        }
    }
    if (w->ok && forward_kv_pieces(m->f, m->n_past, w_put, w) != hd->kv_bytes)
        w->ok = false;
    return w->ok;
}

/* Writes hd and body to path, atomically; 0 or -1 with err set. */
static int write_snapshot(const kv_header *hd, body_fn body, const void *src, const char *path, char *err,
                          size_t errlen)
{
    /* ".NAME.PID.tmp" beside it, as ui/atomic.c names its own (and removes stale ones) */
    const char *slash = strrchr(path, '/');
    const size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    char tmp[4096 + 512];
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.%ld.tmp", (int)dl, path, slash ? slash + 1 : path,
                 (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    unlink(tmp); /* our own, from an earlier failed attempt */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    kv_writer w = {fd >= 0 ? fdopen(fd, "wb") : NULL, EVP_MD_CTX_new(), true};
    if (!w.fp || !w.h || EVP_DigestInit_ex(w.h, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        if (w.fp)
            fclose(w.fp);
        else if (fd >= 0)
            close(fd);
        unlink(tmp);
        EVP_MD_CTX_free(w.h);
        return -1;
    }
    setvbuf(w.fp, NULL, _IOFBF, 1 << 20);
    uint8_t head[HDR_LEN];
    header_encode(hd, head);
    w_putc(&w, head, HDR_LEN);
    body(&w, hd, src);
    uint8_t sum[EVP_MAX_MD_SIZE];
    unsigned int sl = 0;
    if (w.ok && (EVP_DigestFinal_ex(w.h, sum, &sl) != 1 || sl != KV_HASH_LEN))
        w.ok = false;
    if (w.ok)
        w.ok = fwrite(sum, 1, KV_HASH_LEN, w.fp) == KV_HASH_LEN;
    int e = errno;
    /* Not fsynced: a snapshot is a cache, and one cut short by a crash
     * fails its size or checksum and is evaluated again. */
    if (fflush(w.fp) != 0 || ferror(w.fp))
        w.ok = false, e = errno;
    if (fclose(w.fp) != 0 && w.ok)
        w.ok = false, e = errno;
    EVP_MD_CTX_free(w.h);
    if (w.ok && rename(tmp, path) != 0)
        w.ok = false, e = errno;
    if (!w.ok) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write the KV snapshot %s: %s", path, strerror(e ? e : EIO));
        return -1;
    }
    return 0;
}

static bool over_cap(const kv_header *hd, uint64_t max_bytes, char *err, size_t errlen)
{
    if (max_bytes == 0 || hd->total <= max_bytes)
        return false;
    snprintf(err, errlen, "the KV snapshot would take %.1f MiB, over the cap of %.1f MiB (kv_max_mb)",
             (double)hd->total / 1048576.0, (double)max_bytes / 1048576.0);
    return true;
}

int kv_snapshot_save(const memory *m, const kv_stamp *st, const char *path, uint64_t max_bytes,
                     uint64_t *bytes, char *err, size_t errlen)
{
    if (bytes)
        *bytes = 0;
    if (!m->f || m->no_kv_cache) {
        snprintf(err, errlen, "there is no KV cache to save (--no-kv-cache)");
        return -1;
    }
    kv_header hd;
    header_of(m, st, &hd);
    if (over_cap(&hd, max_bytes, err, errlen) || write_snapshot(&hd, body_mem, m, path, err, errlen) != 0)
        return -1;
    if (bytes)
        *bytes = hd.total;
    return 0;
}

/* One sequence: its tokens, each evaluated by "one call" [0, n) (its calls
 * are not kept), its state at its end, no logits and no checkpoints. */
typedef struct seq_src {
    const memory_seq *ms;
    int32_t s;
    size_t rs_bytes;
} seq_src;

static bool body_seq(kv_writer *w, const kv_header *hd, const void *src)
{
    const seq_src *q = src;
    const int32_t n = hd->n_past;
    w_putc(w, memory_seq_tokens(q->ms, q->s), (size_t)n * sizeof(int32_t));
    if (hd->recurrent) {
        int32_t *calls = malloc((size_t)n * sizeof *calls + 1);
        void *state = malloc(q->rs_bytes ? q->rs_bytes : 1);
        w->ok = w->ok && calls && state;
        for (int32_t i = 0; w->ok && i < n; i++)
            calls[i] = 0;
        w_putc(w, calls, (size_t)n * sizeof *calls);
        for (int32_t i = 0; w->ok && i < n; i++)
            calls[i] = n;
        w_putc(w, calls, (size_t)n * sizeof *calls);
        if (w->ok) {
            forward_rs_save_seq(q->ms->f, q->s, state);
            w_putc(w, state, q->rs_bytes);
        }
        free(calls);
        free(state);
    }
    if (w->ok && forward_kv_pieces_seq(q->ms->f, q->s, n, w_put, w) != hd->kv_bytes)
        w->ok = false;
    return w->ok;
}

int kv_snapshot_save_seq(const memory_seq *ms, int32_t s, const kv_stamp *st, const char *path,
                         uint64_t max_bytes, uint64_t *bytes, char *err, size_t errlen)
{
    if (bytes)
        *bytes = 0;
    const int32_t n = s >= 0 && s < ms->n_seq ? memory_seq_n_past(ms, s) : 0;
    if (n <= 0) {
        snprintf(err, errlen, "sequence %d holds nothing", (int)s);
        return -1;
    }
    const bool rec = forward_is_recurrent(ms->f);
    kv_header hd;
    memset(&hd, 0, sizeof hd);
    hd.st = *st;
    hd.n_past = n;
    hd.logits_pos = hd.anchor_pos = -1;
    hd.rs_pos = rec ? n : -1;
    hd.recurrent = rec;
    hd.kv_bytes = forward_kv_pieces_seq(ms->f, s, n, NULL, NULL);
    hd.total = total_of(&hd);
    seq_src q = {ms, s, forward_rs_bytes(ms->f)};
    if (over_cap(&hd, max_bytes, err, errlen) || write_snapshot(&hd, body_seq, &q, path, err, errlen) != 0)
        return -1;
    if (bytes)
        *bytes = hd.total;
    return 0;
}

/* ---- reading ---- */

static bool read_all(FILE *fp, void *dst, size_t n)
{
    return n == 0 || fread(dst, 1, n, fp) == n;
}

static bool r_get(void *user, void *bytes, size_t len)
{
    return read_all(user, bytes, len);
}

/* Why the stamp of a snapshot does not fit now ("" when it does). */
static void stamp_diff(const kv_stamp *a, const kv_stamp *b, char *why, size_t n)
{
    why[0] = 0;
    if (a->model_size != b->model_size || memcmp(a->model_hash, b->model_hash, 32) != 0)
        snprintf(why, n, "it was made with another model file (%s)",
                 a->model_size != b->model_size ? "size differs" : "header or weights differ");
    else if (strcmp(a->isa, b->isa) != 0)
        snprintf(why, n, "it was made by a build with other CPU kernels (%s)", a->isa);
    else if (a->bits.kv_type != b->bits.kv_type || a->bits.v_type != b->bits.v_type)
        snprintf(why, n, "the KV cache type differs (%s/%s then)", forward_kv_type_name(a->bits.kv_type),
                 forward_kv_type_name(a->bits.v_type));
    else if (a->bits.rot_k != b->bits.rot_k || a->bits.rot_v != b->bits.rot_v)
        snprintf(why, n, "the cache rotation differs (LLAMA_ATTN_ROT_DISABLE)");
    else if (a->bits.n_threads != b->bits.n_threads)
        snprintf(why, n, "the thread count differs (%d then, %d now)", a->bits.n_threads, b->bits.n_threads);
    else if (a->bits.n_ctx != b->bits.n_ctx)
        snprintf(why, n, "the context size differs (%u then, %u now)", a->bits.n_ctx, b->bits.n_ctx);
    else if (a->bits.n_batch != b->bits.n_batch)
        snprintf(why, n, "the batch size differs (%u then, %u now)", a->bits.n_batch, b->bits.n_batch);
    else if (a->bits.blas != b->bits.blas)
        snprintf(why, n, "--blas differs (%s then)", blas_mode_name((enum blas_mode)a->bits.blas));
    else if (a->n_vocab != b->n_vocab || a->rs_bytes != b->rs_bytes)
        snprintf(why, n, "the model's shape differs");
}

/* Pass 1: the file's size and checksum, then its stamp. */
static int check(FILE *fp, const char *path, const kv_stamp *st, kv_header *hd, char *why, size_t whylen)
{
    struct stat sb;
    uint8_t head[HDR_LEN];
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(why, whylen, "%s is not a regular file", path);
        return 1;
    }
    if ((uint64_t)sb.st_size < HDR_LEN + KV_HASH_LEN || !read_all(fp, head, HDR_LEN) ||
        !header_decode(head, hd)) {
        snprintf(why, whylen, "%s is not a KV snapshot of this version (or is cut short)", path);
        return 1;
    }
    const uint64_t total = total_of(hd);
    if (total == 0 || total != hd->total) {
        snprintf(why, whylen, "%s is damaged (its header does not add up)", path);
        return 1;
    }
    if ((uint64_t)sb.st_size != total) {
        snprintf(why, whylen, "%s is %s (%llu of %llu bytes)", path,
                 (uint64_t)sb.st_size < total ? "truncated" : "longer than it says",
                 (unsigned long long)sb.st_size, (unsigned long long)total);
        return 1;
    }
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    bool ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(h, head, HDR_LEN) == 1;
    uint8_t *buf = malloc(1 << 20);
    uint64_t left = total - HDR_LEN - KV_HASH_LEN;
    while (ok && buf && left > 0) {
        const size_t n = left < (1u << 20) ? (size_t)left : (1u << 20);
        ok = read_all(fp, buf, n) && EVP_DigestUpdate(h, buf, n) == 1;
        left -= n;
    }
    uint8_t sum[EVP_MAX_MD_SIZE], want[KV_HASH_LEN];
    unsigned int sl = 0;
    const bool io = ok && buf;
    ok = io && EVP_DigestFinal_ex(h, sum, &sl) == 1 && sl == KV_HASH_LEN && read_all(fp, want, KV_HASH_LEN) &&
         memcmp(sum, want, KV_HASH_LEN) == 0;
    free(buf);
    EVP_MD_CTX_free(h);
    if (!ok) {
        snprintf(why, whylen, io ? "%s is damaged (checksum mismatch)" : "cannot read %s: %s", path,
                 io ? "" : strerror(errno ? errno : EIO));
        return 1;
    }
    stamp_diff(&hd->st, st, why, whylen);
    return why[0] ? 1 : 0;
}

/* The counts and positions a memory can take (a checksum guards against
 * damage, not against a file made to pass it). */
static bool fits(const memory *m, const kv_header *hd)
{
    return hd->n_past <= m->n_ctx && (bool)hd->recurrent == m->recurrent && hd->logits_pos <= hd->n_past &&
           hd->anchor_pos <= hd->n_past && hd->rs_pos <= hd->n_past &&
           hd->kv_bytes == forward_kv_pieces(m->f, hd->n_past, NULL, NULL);
}

int kv_snapshot_load(memory *m, const kv_stamp *st, const char *path, int32_t *n_tokens, char *why,
                     size_t whylen)
{
    *n_tokens = 0;
    why[0] = 0;
    if (!m->f || m->no_kv_cache) {
        snprintf(why, whylen, "there is no KV cache (--no-kv-cache)");
        return 1;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    kv_header hd;
    int rc = check(fp, path, st, &hd, why, whylen);
    if (rc == 0 && !fits(m, &hd)) {
        snprintf(why, whylen, "%s does not fit this model's memory", path);
        rc = 1;
    }
    const int32_t n = hd.n_past;
    const size_t nv = (size_t)m->n_vocab * sizeof(float), np = (size_t)n * sizeof(int32_t);
    /* the small parts first, checked before the memory changes */
    int32_t *toks = NULL, *cs = NULL, *ce = NULL;
    if (rc == 0) {
        toks = malloc(np + 1);
        cs = malloc(np + 1);
        ce = malloc(np + 1);
        bool ok = toks && cs && ce && fseek(fp, HDR_LEN, SEEK_SET) == 0 && read_all(fp, toks, np);
        if (ok && hd.recurrent)
            ok = read_all(fp, cs, np) && read_all(fp, ce, np);
        for (int32_t i = 0; ok && i < n; i++)
            ok = toks[i] >= 0 && toks[i] < m->n_vocab &&
                 (!hd.recurrent || (cs[i] >= 0 && cs[i] <= i && ce[i] > i && ce[i] <= n &&
                                    (i == 0 || cs[i] == cs[i - 1] || cs[i] == i)));
        if (ok && hd.rs_pos > 0 && ce[hd.rs_pos - 1] != hd.rs_pos)
            ok = false;
        if (!ok) {
            snprintf(why, whylen, "%s does not fit this model's memory (tokens)", path);
            rc = 1;
        }
    }
    if (rc != 0) {
        free(toks);
        free(cs);
        free(ce);
        fclose(fp);
        return 1;
    }
    /* from here on the memory is replaced */
    memory_truncate(m, 0);
    memory_ckpt_clear(m);
    memcpy(m->tokens, toks, np);
    if (hd.recurrent) {
        memcpy(m->call_start, cs, np);
        memcpy(m->call_end, ce, np);
    }
    bool ok = true;
    if (hd.logits_pos >= 0)
        ok = read_all(fp, m->logits, nv);
    if (ok && hd.anchor_pos >= 0)
        ok = read_all(fp, m->anchor, nv);
    if (ok && hd.recurrent) {
        void *state = malloc(m->rs_bytes ? m->rs_bytes : 1);
        ok = state != NULL;
        if (ok && hd.rs_pos >= 0 && (ok = read_all(fp, state, m->rs_bytes)))
            forward_rs_load(m->f, state, hd.rs_pos);
        else
            forward_rs_reset(m->f);
        free(state);
        int32_t prev = 0;
        for (int32_t i = 0; ok && i < hd.n_ckpt; i++) {
            memory_ckpt c = {0, malloc(m->rs_bytes ? m->rs_bytes : 1), malloc(nv)};
            memory_ckpt *v = realloc(m->ckpt, (size_t)(m->n_ckpt + 1) * sizeof *v);
            ok = c.state && c.logits && v && read_all(fp, &c.pos, 4) && read_all(fp, c.state, m->rs_bytes) &&
                 read_all(fp, c.logits, nv) && c.pos > prev && c.pos <= n && ce[c.pos - 1] == c.pos;
            if (v)
                m->ckpt = v;
            if (!ok) {
                free(c.state);
                free(c.logits);
                break;
            }
            prev = c.pos;
            m->ckpt[m->n_ckpt++] = c;
            m->ckpt_bytes += memory_ckpt_unit_bytes(m);
        }
    }
    if (ok)
        ok = forward_kv_pieces(m->f, n, r_get, fp) == hd.kv_bytes;
    fclose(fp);
    free(toks);
    free(cs);
    free(ce);
    if (!ok) { /* the cache holds part of it: nothing of it is trusted */
        memory_ckpt_clear(m);
        m->ckpt_bytes = 0;
        memory_truncate(m, 0);
        if (m->recurrent)
            forward_rs_reset(m->f);
        snprintf(why, whylen, "reading %s failed half way: %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    m->n_past = n;
    m->v_end = n;
    m->logits_pos = hd.logits_pos;
    m->anchor_pos = hd.anchor_pos;
    *n_tokens = n;
    return 0;
}

int kv_snapshot_load_seq(memory_seq *ms, int32_t s, const kv_stamp *st, const char *path, int32_t *n_tokens,
                         char *why, size_t whylen)
{
    *n_tokens = 0;
    why[0] = 0;
    if (s < 0 || s >= ms->n_seq) {
        snprintf(why, whylen, "there is no sequence %d", (int)s);
        return 1;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    kv_header hd;
    int rc = check(fp, path, st, &hd, why, whylen);
    const bool rec = forward_is_recurrent(ms->f);
    const int32_t n = hd.n_past;
    if (rc == 0 && (n <= 0 || n > ms->n_ctx || (bool)hd.recurrent != rec || (rec && hd.rs_pos != n) ||
                    hd.kv_bytes != forward_kv_pieces_seq(ms->f, s, n, NULL, NULL))) {
        /* a sequence keeps no checkpoints: a recurrent state must be at the end */
        snprintf(why, whylen, "%s does not fit this model's memory", path);
        rc = 1;
    }
    const size_t nv = (size_t)hd.st.n_vocab * sizeof(float), np = (size_t)n * sizeof(int32_t);
    int32_t *toks = rc == 0 ? malloc(np + 1) : NULL;
    void *state = rc == 0 && rec ? malloc(hd.st.rs_bytes ? hd.st.rs_bytes : 1) : NULL;
    bool ok = rc == 0 && toks && (!rec || state) && fseek(fp, HDR_LEN, SEEK_SET) == 0 && read_all(fp, toks, np);
    for (int32_t i = 0; ok && i < n; i++)
        ok = toks[i] >= 0 && toks[i] < hd.st.n_vocab;
    /* what a sequence does not keep: the calls, logits, anchor (checked by the checksum) */
    long skip = (long)((rec ? 2 * np : 0) + (hd.logits_pos >= 0 ? nv : 0) + (hd.anchor_pos >= 0 ? nv : 0));
    if (ok && skip)
        ok = fseek(fp, skip, SEEK_CUR) == 0;
    if (ok && rec)
        ok = read_all(fp, state, hd.st.rs_bytes) &&
             fseek(fp, (long)((uint64_t)hd.n_ckpt * (4 + hd.st.rs_bytes + nv)), SEEK_CUR) == 0;
    if (rc == 0 && !ok) {
        snprintf(why, whylen, "%s does not fit this model's memory (tokens)", path);
        rc = 1;
    }
    if (rc != 0) {
        free(toks);
        free(state);
        fclose(fp);
        return 1;
    }
    /* from here on the stream is replaced */
    ok = forward_kv_pieces_seq(ms->f, s, n, r_get, fp) == hd.kv_bytes;
    fclose(fp);
    if (ok && rec)
        forward_rs_load_seq(ms->f, s, state, n);
    if (ok)
        memory_seq_restored(ms, s, toks, n);
    else
        memory_seq_truncate(ms, s, 0);
    free(toks);
    free(state);
    if (!ok) {
        snprintf(why, whylen, "reading %s failed half way: %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    *n_tokens = n;
    return 0;
}
