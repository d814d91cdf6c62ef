/* The engine tests' wait for the next event: within WAIT_MS, else the test
 * fails (a hung engine fails one test instead of stalling the suite).
 * Include after cmocka.h and engine.h. */
#ifndef TOKSCOPE_TEST_ENGINE_EVENTS_H
#define TOKSCOPE_TEST_ENGINE_EVENTS_H

#include <poll.h>

#define WAIT_MS 60000

static inline void next_event(engine *e, engine_event *ev)
{
    int waited = 0;
    while (!engine_poll(e, ev)) {
        struct pollfd p = {.fd = engine_event_fd(e), .events = POLLIN};
        int r = poll(&p, 1, 200);
        assert_true(r >= 0);
        if (r == 0 && (waited += 200) >= WAIT_MS)
            fail_msg("no engine event within %d ms", WAIT_MS);
    }
}

#endif
