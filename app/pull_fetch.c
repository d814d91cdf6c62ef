/* `tokscope pull`: the network side (see pull.h), all HTTP through libcurl.
 *
 * A download writes DEST.part and gives it the final name only once the
 * bytes match the sha256 the hub publishes (its LFS oid, or the
 * X-Linked-ETag header of the file's response), so a cut connection, a full
 * disk or a bad server never leave a corrupt file where the picker would
 * offer it. A later run resumes the .part with a Range request; a server
 * that answers a range with the whole file (200) starts it over. */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pull.h"

static void curl_once(void)
{
    static int done;
    if (!done) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        done = 1;
    }
}

static CURL *easy_new(const pull_net *net, const char *url)
{
    curl_once();
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tokscope/" TOKSCOPE_VERSION);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* a stalled transfer: fewer than 1 byte/s for stall_seconds */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, net->stall_seconds > 0 ? net->stall_seconds : 60L);
    if (net->token && *net->token) {
        /* libcurl sends it to the host named in url only, never to a
         * redirect's other host (the hub redirects files to its CDN) */
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
        curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, net->token);
    }
    return h;
}

static void status_message(long code, const char *url, const pull_net *net, char *err, size_t errlen)
{
    if (code == 401 || code == 403)
        snprintf(err, errlen, "%s: HTTP %ld: the repository is gated or private: %s", url, code,
                 net->token && *net->token ? "HF_TOKEN was sent and refused (accept the model's terms on "
                                             "the hub, or check the token)"
                                           : "set HF_TOKEN to a token with access");
    else if (code == 404)
        snprintf(err, errlen, "%s: HTTP 404: not found (check the repository and file names)", url);
    else if (code == 429)
        snprintf(err, errlen, "%s: HTTP 429: rate limited by the server; try again later", url);
    else
        snprintf(err, errlen, "%s: HTTP %ld", url, code);
}

typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static size_t mem_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    membuf *b = ud;
    size_t add = size * nmemb;
    if (b->n + add + 1 > 64u << 20) /* a listing past 64 MB is not a listing */
        return 0;
    if (b->n + add + 1 > b->cap) {
        size_t nc = (b->n + add + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np)
            return 0;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, ptr, add);
    b->n += add;
    b->p[b->n] = 0;
    return add;
}

int pull_fetch_text(const pull_net *net, const char *url, char **body, char *err, size_t errlen)
{
    *body = NULL;
    CURL *h = easy_new(net, url);
    if (!h) {
        snprintf(err, errlen, "libcurl failed to start");
        return -1;
    }
    membuf b = {0};
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", url, cerr[0] ? cerr : curl_easy_strerror(rc));
        free(b.p);
        return -1;
    }
    if (code != 200) {
        status_message(code, url, net, err, errlen);
        free(b.p);
        return -1;
    }
    *body = b.p ? b.p : strdup("");
    return 0;
}

/* ---- file downloads ---- */

typedef struct dl {
    FILE *f;
    const char *part;
    EVP_MD_CTX *md;
    uint64_t have;      /* bytes in the .part file (and hashed) */
    uint64_t start;     /* bytes there when this request began */
    uint64_t total;     /* expected size, 0 = unknown */
    bool ranged;        /* we asked for a range */
    bool restarted;     /* the server sent the whole file instead */
    bool bad_status;
    int write_errno;
    char etag[80];      /* X-Linked-ETag (the sha256, quoted) */
    char cerr[CURL_ERROR_SIZE];
    CURL *h;
    const pull_net *net;
    const char *label;
    double t0, last_draw;
} dl;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void human(char *out, size_t n, double bytes)
{
    const char *u[] = {"B", "KB", "MB", "GB", "TB"};
    int i = 0;
    while (bytes >= 1000 && i < 4) {
        bytes /= 1000;
        i++;
    }
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

static void draw(dl *d, bool final)
{
    if (!d->net->progress)
        return;
    double t = now_s();
    if (!final && t - d->last_draw < 0.2)
        return;
    d->last_draw = t;
    double el = t - d->t0;
    double speed = el > 0 ? (double)(d->have - d->start) / el : 0;
    char hv[32], tv[32], sv[32], eta[32] = "";
    human(hv, sizeof hv, (double)d->have);
    human(tv, sizeof tv, (double)d->total);
    human(sv, sizeof sv, speed);
    int width = 24, fillw = 0;
    double frac = d->total ? (double)d->have / (double)d->total : 0;
    if (frac > 1)
        frac = 1;
    fillw = (int)(frac * width);
    if (d->total && speed > 0 && d->have < d->total) {
        long s = (long)((double)(d->total - d->have) / speed);
        snprintf(eta, sizeof eta, " ETA %ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    }
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fillw ? '#' : '-';
    bar[width] = 0;
    fprintf(stderr, "\r%-.40s [%s] %3.0f%% %s / %s %s/s%s\033[K", d->label, bar, frac * 100, hv,
            d->total ? tv : "?", sv, eta);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    dl *d = ud;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(buf, "HTTP/", 5))
        d->etag[0] = 0; /* a new response (after a redirect): its own headers */
    const char *k = "x-linked-etag:";
    size_t kl = strlen(k);
    if (n > kl && !strncasecmp(buf, k, kl)) {
        const char *v = buf + kl;
        size_t vl = n - kl;
        while (vl && (*v == ' ' || *v == '"')) {
            v++;
            vl--;
        }
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == '"' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof d->etag) {
            memcpy(d->etag, v, vl);
            d->etag[vl] = 0;
        }
    }
    return n;
}

static size_t file_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    dl *d = ud;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(d->h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200 && code != 206) {
        d->bad_status = true;
        return 0;
    }
    if (code == 200 && d->ranged && !d->restarted) {
        /* the server ignored the range: start the file over */
        d->restarted = true;
        if (ftruncate(fileno(d->f), 0) != 0 || fseek(d->f, 0, SEEK_SET) != 0) {
            d->write_errno = errno;
            return 0;
        }
        EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
        d->have = d->start = 0;
    }
    if (fwrite(ptr, 1, n, d->f) != n || fflush(d->f) != 0) {
        d->write_errno = errno ? errno : EIO;
        return 0;
    }
    EVP_DigestUpdate(d->md, ptr, n);
    d->have += n;
    draw(d, false);
    return n;
}

/* Hashes the first `have` bytes of an existing .part (a resume continues the hash). */
static int hash_existing(FILE *f, EVP_MD_CTX *md, uint64_t have)
{
    static char buf[1 << 16];
    uint64_t left = have;
    if (fseek(f, 0, SEEK_SET) != 0)
        return -1;
    while (left) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, want, f) != want)
            return -1;
        EVP_DigestUpdate(md, buf, want);
        left -= want;
    }
    return fseek(f, 0, SEEK_END);
}

static bool is_sha256(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

int pull_fetch_file(const pull_net *net, const char *url, const char *dest, uint64_t size,
                    const char *sha256, char *err, size_t errlen)
{
    char part[4096];
    if (snprintf(part, sizeof part, "%s.part", dest) >= (int)sizeof part) {
        snprintf(err, errlen, "path too long: %s", dest);
        return -1;
    }
    struct stat st;
    uint64_t have = stat(part, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (size && have > size) /* not a prefix of this file: start over */
        have = 0;
    FILE *f = fopen(part, have ? "r+b" : "w+b");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", part, strerror(errno));
        return -1;
    }
    dl d = {.f = f, .part = part, .have = have, .start = have, .total = size, .net = net};
    const char *slash = strrchr(dest, '/');
    d.label = slash ? slash + 1 : dest;
    d.md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(d.md, EVP_sha256(), NULL);
    if (have && hash_existing(f, d.md, have) != 0) {
        snprintf(err, errlen, "cannot read %s to resume it: %s", part, strerror(errno));
        fclose(f);
        EVP_MD_CTX_free(d.md);
        return -1;
    }
    int rc = -1;
    if (size && have == size)
        goto verify; /* complete already: only the checksum and the rename were left */
    if (have)
        fprintf(stderr, "resuming %s at %llu bytes\n", d.label, (unsigned long long)have);
    d.h = easy_new(net, url);
    if (!d.h) {
        snprintf(err, errlen, "libcurl failed to start");
        goto out;
    }
    char range[64];
    if (have) {
        snprintf(range, sizeof range, "%llu-", (unsigned long long)have);
        curl_easy_setopt(d.h, CURLOPT_RANGE, range);
        d.ranged = true;
    }
    curl_easy_setopt(d.h, CURLOPT_WRITEFUNCTION, file_write);
    curl_easy_setopt(d.h, CURLOPT_WRITEDATA, &d);
    curl_easy_setopt(d.h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(d.h, CURLOPT_HEADERDATA, &d);
    curl_easy_setopt(d.h, CURLOPT_ERRORBUFFER, d.cerr);
    d.t0 = d.last_draw = now_s();
    d.last_draw -= 1;
    CURLcode cr = curl_easy_perform(d.h);
    long code = 0;
    curl_easy_getinfo(d.h, CURLINFO_RESPONSE_CODE, &code);
    if (!d.total) {
        curl_off_t cl = -1;
        curl_easy_getinfo(d.h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        if (cl > 0)
            d.total = (uint64_t)cl + (code == 206 ? d.start : 0);
    }
    curl_easy_cleanup(d.h);
    draw(&d, true);
    if (code == 416 && have) /* nothing after what we have: the .part is whole */
        cr = CURLE_OK, code = 206;
    if (d.write_errno) {
        snprintf(err, errlen, "writing %s failed after %llu bytes: %s%s; the partial download is kept: "
                 "free space and run the same command again to resume", part, (unsigned long long)d.have,
                 strerror(d.write_errno),
                 d.write_errno == ENOSPC || d.write_errno == EFBIG || d.write_errno == EDQUOT ? " (disk full?)" : "");
        goto out;
    }
    if (d.bad_status || (cr == CURLE_OK && code != 200 && code != 206)) {
        status_message(code, url, net, err, errlen);
        goto out;
    }
    if (cr != CURLE_OK) {
        char tot[32] = "?";
        if (d.total)
            snprintf(tot, sizeof tot, "%llu", (unsigned long long)d.total);
        snprintf(err, errlen, "download of %s stopped after %llu of %s bytes: %s; the partial download %s is "
                 "kept: run the same command again to resume", d.label, (unsigned long long)d.have, tot,
                 d.cerr[0] ? d.cerr : curl_easy_strerror(cr), part);
        goto out;
    }
    if (d.total && d.have != d.total) {
        snprintf(err, errlen, "download of %s ended after %llu of %llu bytes; the partial download %s is kept: "
                 "run the same command again to resume", d.label, (unsigned long long)d.have,
                 (unsigned long long)d.total, part);
        goto out;
    }
verify:;
    const char *want = is_sha256(sha256) ? sha256 : is_sha256(d.etag) ? d.etag : NULL;
    unsigned char dig[32];
    unsigned int dl_len = 0;
    EVP_DigestFinal_ex(d.md, dig, &dl_len);
    char got[65];
    for (int i = 0; i < 32; i++)
        snprintf(got + 2 * i, 3, "%02x", dig[i]);
    if (fclose(f) != 0) {
        f = NULL;
        snprintf(err, errlen, "writing %s failed: %s; run the same command again to resume", part, strerror(errno));
        goto out;
    }
    f = NULL;
    if (want && strcmp(want, got)) {
        unlink(part);
        snprintf(err, errlen, "%s: sha256 %s, but the hub publishes %s: the download is corrupt and was "
                 "deleted (run the command again; if it repeats, the server or a proxy alters the file)",
                 d.label, got, want);
        goto out;
    }
    if (rename(part, dest) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", part, dest, strerror(errno));
        goto out;
    }
    fprintf(stderr, "%s: %s%s\n", dest, want ? "sha256 ok " : "no sha256 published, not checked",
            want ? got : "");
    rc = 0;
out:
    if (f)
        fclose(f);
    EVP_MD_CTX_free(d.md);
    return rc;
}
