/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What ends the early-boot pass (early-stop.c): no budget stops it at once, a spent budget and SIGTERM or
 * SIGINT (also one sent before the watch started) stop it and say which, and a pass that ends first is
 * never cancelled. Real signals to this process, a real timer. */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "relocate/early-stop.h"
#include "common/macro.h"
#include "test-util.h"

/* Waits up to 10 s (generous: the thread only has to wake) for the cancel. */
static bool cancelled_soon(atomic_bool *cancel) {
        for (int i = 0; i < 1000; i++) {
                if (atomic_load(cancel))
                        return true;
                (void) usleep(10000);
        }
        return false;
}

TEST(no_budget) {
        atomic_bool cancel = false;
        EarlyStop *s = NULL;

        ASSERT_OK(early_stop_start(0, &cancel, &s));
        ASSERT_TRUE(atomic_load(&cancel));
        ASSERT_EQ(early_stop_signal(s), 0);
        s = early_stop_free(s);
}

TEST(budget_spent) {
        atomic_bool cancel = false;
        EarlyStop *s = NULL;

        ASSERT_OK(early_stop_start(50 * 1000, &cancel, &s));
        ASSERT_TRUE(cancelled_soon(&cancel));
        ASSERT_EQ(early_stop_signal(s), 0);
        s = early_stop_free(s);
}

TEST(finished_first) {
        atomic_bool cancel = false;
        EarlyStop *s = NULL;

        ASSERT_OK(early_stop_start(600 * USEC_PER_SEC, &cancel, &s));
        s = early_stop_free(s);
        ASSERT_TRUE(!atomic_load(&cancel));
}

TEST(sigterm) {
        atomic_bool cancel = false;
        EarlyStop *s = NULL;

        ASSERT_OK(early_stop_start(600 * USEC_PER_SEC, &cancel, &s));
        ASSERT_TRUE(!atomic_load(&cancel));
        ASSERT_TRUE(kill(getpid(), SIGTERM) == 0);
        ASSERT_TRUE(cancelled_soon(&cancel));
        ASSERT_EQ(early_stop_signal(s), SIGTERM);
        s = early_stop_free(s);
}

/* A SIGINT that came while the pass was still opening its database: blocked, it waits for the watch. */
TEST(sigint_before) {
        atomic_bool cancel = false;
        EarlyStop *s = NULL;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        ASSERT_TRUE(sigprocmask(SIG_BLOCK, &mask, NULL) == 0);
        ASSERT_TRUE(kill(getpid(), SIGINT) == 0);
        ASSERT_OK(early_stop_start(600 * USEC_PER_SEC, &cancel, &s));
        ASSERT_TRUE(cancelled_soon(&cancel));
        ASSERT_EQ(early_stop_signal(s), SIGINT);
        s = early_stop_free(s);
}

int main(void) {
        RUN(no_budget);
        RUN(budget_spent);
        RUN(finished_first);
        RUN(sigterm);
        RUN(sigint_before);
        return EXIT_SUCCESS;
}
