/* Thread-safe FIFO of fixed-size items (mutex + condition variable), used for
 * the engine's command and event queues.
 *
 * With a wake fd (an eventfd) the queue is pollable: every push writes to the
 * fd, and the pop that empties the queue drains it, both under the queue's
 * lock, so the fd is readable exactly while items are pending. */
#ifndef TOKSCOPE_QUEUE_H
#define TOKSCOPE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct queue queue;

/* NULL when out of memory or the fd cannot be created. */
queue *queue_build(size_t item_size, bool with_wake_fd);
/* drop (may be NULL) is called on every item still queued. */
void queue_free(queue *q, void (*drop)(void *item));

/* Copies item in; grows as needed. False only when out of memory. */
bool queue_push(queue *q, const void *item);
/* Non-blocking: copies the oldest item out and returns true, or false when empty. */
bool queue_pop(queue *q, void *item);
/* Waits up to timeout_ms (< 0: forever) for an item. */
bool queue_pop_wait(queue *q, void *item, int timeout_ms);
size_t queue_len(queue *q);
/* Readable while items are pending; -1 without a wake fd. */
int queue_fd(const queue *q);

#endif
