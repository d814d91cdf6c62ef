#include "queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t item_size;
    unsigned char *buf; /* ring of cap items */
    size_t cap, head, len;
    int fd;
};

queue *queue_build(size_t item_size, bool with_wake_fd)
{
    if (item_size == 0)
        return NULL;
    queue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->item_size = item_size;
    q->cap = 16;
    q->buf = malloc(q->cap * item_size);
    q->fd = -1;
    if (!q->buf)
        goto fail;
    if (with_wake_fd) {
        q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (q->fd < 0)
            goto fail;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&q->mu, NULL);
    return q;
fail:
    free(q->buf);
    free(q);
    return NULL;
}

void queue_free(queue *q, void (*drop)(void *item))
{
    if (!q)
        return;
    if (drop)
        for (size_t i = 0; i < q->len; i++)
            drop(q->buf + ((q->head + i) % q->cap) * q->item_size);
    if (q->fd >= 0)
        close(q->fd);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q->buf);
    free(q);
}

bool queue_push(queue *q, const void *item)
{
    pthread_mutex_lock(&q->mu);
    if (q->len == q->cap) {
        /* grow and unwrap the ring */
        unsigned char *nb = malloc(2 * q->cap * q->item_size);
        if (!nb) {
            pthread_mutex_unlock(&q->mu);
            return false;
        }
        size_t first = q->cap - q->head;
        if (first > q->len)
            first = q->len;
        memcpy(nb, q->buf + q->head * q->item_size, first * q->item_size);
        memcpy(nb + first * q->item_size, q->buf, (q->len - first) * q->item_size);
        free(q->buf);
        q->buf = nb;
        q->cap *= 2;
        q->head = 0;
    }
    memcpy(q->buf + ((q->head + q->len) % q->cap) * q->item_size, item, q->item_size);
    q->len++;
    if (q->fd >= 0) {
        uint64_t one = 1;
        ssize_t w;
        do
            w = write(q->fd, &one, sizeof one);
        while (w < 0 && errno == EINTR);
    }
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return true;
}

/* Called with the lock held and len > 0. */
static void take(queue *q, void *item)
{
    memcpy(item, q->buf + q->head * q->item_size, q->item_size);
    q->head = (q->head + 1) % q->cap;
    q->len--;
    if (q->len == 0 && q->fd >= 0) {
        uint64_t v;
        ssize_t r;
        do
            r = read(q->fd, &v, sizeof v);
        while (r < 0 && errno == EINTR);
    }
}

bool queue_pop(queue *q, void *item)
{
    pthread_mutex_lock(&q->mu);
    bool ok = q->len > 0;
    if (ok)
        take(q, item);
    pthread_mutex_unlock(&q->mu);
    return ok;
}

bool queue_pop_wait(queue *q, void *item, int timeout_ms)
{
    struct timespec dl;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->mu);
    while (q->len == 0) {
        int rc = timeout_ms < 0 ? pthread_cond_wait(&q->cv, &q->mu) : pthread_cond_timedwait(&q->cv, &q->mu, &dl);
        if (rc == ETIMEDOUT)
            break;
    }
    bool ok = q->len > 0;
    if (ok)
        take(q, item);
    pthread_mutex_unlock(&q->mu);
    return ok;
}

size_t queue_len(queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int queue_fd(const queue *q) { return q->fd; }
