/* Thread-safe FIFO: order, growth, producer/consumer across threads, wake fd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "queue.h"
#include "testutil.h"

static bool fd_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_fifo_order(void **state)
{
    (void)state;
    queue *q = queue_build(sizeof(int), false);
    assert_non_null(q);
    assert_int_equal(queue_fd(q), -1);
    int v;
    assert_false(queue_pop(q, &v));
    for (int i = 0; i < 5; i++)
        assert_true(queue_push(q, &i));
    assert_int_equal(queue_len(q), 5);
    for (int i = 0; i < 5; i++) {
        assert_true(queue_pop(q, &v));
        assert_int_equal(v, i);
    }
    assert_false(queue_pop(q, &v));
    queue_free(q, NULL);
}

/* Interleaved pushes and pops wrap the ring; growth must keep the order. */
static void test_many_wrap_grow(void **state)
{
    (void)state;
    typedef struct { int64_t a; char pad[40]; } big;
    queue *q = queue_build(sizeof(big), false);
    int64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 200; round++) {
        int pushes = 1 + (round * 37) % 97, pops = (round * 53) % 89;
        for (int i = 0; i < pushes; i++) {
            big b = {.a = next_in++};
            assert_true(queue_push(q, &b));
        }
        for (int i = 0; i < pops; i++) {
            big b;
            if (!queue_pop(q, &b))
                break;
            assert_int_equal(b.a, next_out++);
        }
    }
    big b;
    while (queue_pop(q, &b))
        assert_int_equal(b.a, next_out++);
    assert_int_equal(next_out, next_in);
    assert_true(next_in > 5000);
    queue_free(q, NULL);
}

enum { N_ITEMS = 200000 };

static void *producer(void *arg)
{
    queue *q = arg;
    for (int i = 0; i < N_ITEMS; i++)
        if (!queue_push(q, &i))
            return (void *)1;
    return NULL;
}

/* Fast producer, slow consumer that sleeps on the wake fd: nothing lost, order kept. */
static void test_producer_consumer(void **state)
{
    (void)state;
    queue *q = queue_build(sizeof(int), true);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, q), 0);
    int expect = 0, wakeups = 0;
    while (expect < N_ITEMS) {
        struct pollfd p = {.fd = queue_fd(q), .events = POLLIN};
        int r = poll(&p, 1, 5000);
        assert_int_equal(r, 1); /* something must arrive well within 5 s */
        wakeups++;
        int v, got = 0;
        while (queue_pop(q, &v)) {
            assert_int_equal(v, expect);
            expect++;
            if (++got == 1000) { /* be slow: let the producer run ahead */
                struct timespec ts = {0, 200000};
                nanosleep(&ts, NULL);
                got = 0;
            }
        }
    }
    void *rv;
    pthread_join(th, &rv);
    assert_null(rv);
    int v;
    assert_false(queue_pop(q, &v));
    assert_false(fd_readable(queue_fd(q)));
    /* the consumer slept in poll instead of spinning: far fewer wakeups than items */
    assert_true(wakeups < N_ITEMS / 2);
    queue_free(q, NULL);
}

static void test_wake_fd(void **state)
{
    (void)state;
    queue *q = queue_build(sizeof(int), true);
    int fd = queue_fd(q);
    assert_true(fd >= 0);
    assert_false(fd_readable(fd));
    /* an empty queue's fd blocks poll until the timeout: a poll loop does not spin */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 30), 0);
    int v = 1;
    queue_push(q, &v);
    assert_true(fd_readable(fd));
    v = 2;
    queue_push(q, &v);
    v = 3;
    queue_push(q, &v);
    assert_true(queue_pop(q, &v));
    assert_true(fd_readable(fd)); /* two still pending */
    assert_true(queue_pop(q, &v));
    assert_true(queue_pop(q, &v));
    assert_int_equal(v, 3);
    assert_false(fd_readable(fd)); /* drained by the pop that emptied it */
    v = 4;
    queue_push(q, &v);
    assert_true(fd_readable(fd));
    assert_true(queue_pop_wait(q, &v, 0));
    assert_false(fd_readable(fd));
    queue_free(q, NULL);
}

static void *late_push(void *arg)
{
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    int v = 77;
    queue_push(arg, &v);
    return NULL;
}

static void test_pop_wait(void **state)
{
    (void)state;
    queue *q = queue_build(sizeof(int), false);
    int v = 0;
    assert_false(queue_pop_wait(q, &v, 20)); /* empty: times out */
    pthread_t th;
    pthread_create(&th, NULL, late_push, q);
    assert_true(queue_pop_wait(q, &v, -1)); /* blocks until the other thread pushes */
    assert_int_equal(v, 77);
    pthread_join(th, NULL);
    queue_free(q, NULL);
}

static int dropped;
static void drop_item(void *item)
{
    dropped += *(int *)item;
}

static void test_free_drops(void **state)
{
    (void)state;
    queue *q = queue_build(sizeof(int), true);
    for (int i = 1; i <= 40; i++)
        queue_push(q, &i);
    int v;
    queue_pop(q, &v);
    dropped = 0;
    queue_free(q, drop_item);
    assert_int_equal(dropped, 40 * 41 / 2 - 1);
    assert_null(queue_build(0, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),        cmocka_unit_test(test_many_wrap_grow),
        cmocka_unit_test(test_producer_consumer), cmocka_unit_test(test_wake_fd),
        cmocka_unit_test(test_pop_wait),          cmocka_unit_test(test_free_drops),
    };
    return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
