/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The exec thread's holds and its ring of recently allowed execs (recorder.h, "Holding execs"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/exec-holds.h"
#include "common/macro.h"
#include "test-util.h"

static FileKey key(uint32_t ino) {
        FileKey k = { .fsid = 7, .handle_type = 1, .handle_len = 8 };

        memcpy(k.handle, &ino, sizeof ino);
        return k;
}

TEST(holds) {
        _cleanup_free_ ExecHolds *h = calloc(1, sizeof *h);
        FileKey a = key(1), b = key(2);

        ASSERT_TRUE(!exec_holds_has(h, &a));
        ASSERT_OK(exec_holds_add(h, &a));
        ASSERT_EQ(exec_holds_add(h, &a), -EEXIST);
        ASSERT_TRUE(exec_holds_has(h, &a));
        ASSERT_TRUE(!exec_holds_has(h, &b));
        ASSERT_EQ(exec_holds_remove(h, &b), -ENOENT);
        ASSERT_OK(exec_holds_remove(h, &a));
        ASSERT_TRUE(!exec_holds_has(h, &a));
        for (uint32_t i = 0; i < EXEC_HOLDS_MAX; i++) {
                FileKey k = key(100 + i);
                ASSERT_OK(exec_holds_add(h, &k));
        }
        ASSERT_EQ(exec_holds_add(h, &b), -ENOSPC);
}

/* the execs of one file since a time, newest first; older ones end the walk */
TEST(recent) {
        _cleanup_free_ ExecHolds *h = calloc(1, sizeof *h);
        _cleanup_free_ RecentExec *out = calloc(EXEC_RECENT_MAX, sizeof *out);
        FileKey a = key(1), b = key(2);

        for (int i = 0; i < 10; i++)
                exec_holds_note_allowed(h, &(RecentExec) { .key = i % 2 ? b : a, .pid = 100 + i, .usec = 1000 + i });
        ASSERT_EQ(exec_holds_recent(h, &a, 1004, out, EXEC_RECENT_MAX), 3);     /* 1008, 1006, 1004 */
        ASSERT_EQ(out[0].pid, 108);
        ASSERT_EQ(out[2].pid, 104);
        ASSERT_EQ(exec_holds_recent(h, &b, 0, out, EXEC_RECENT_MAX), 5);
        ASSERT_EQ(exec_holds_recent(h, &b, 2000, out, EXEC_RECENT_MAX), 0);
        ASSERT_EQ(exec_holds_recent(h, &a, 0, out, 2), -EOVERFLOW);              /* more than asked for */
}

/* a full ring that is all newer than the time asked for may have lost an exec of the file: -EOVERFLOW;
 * one that reaches back past it has not */
TEST(ring_overflow) {
        _cleanup_free_ ExecHolds *h = calloc(1, sizeof *h);
        _cleanup_free_ RecentExec *out = calloc(EXEC_RECENT_MAX, sizeof *out);
        FileKey a = key(1), b = key(2);

        exec_holds_note_allowed(h, &(RecentExec) { .key = a, .pid = 1, .usec = 10 });
        for (int i = 0; i < EXEC_RECENT_MAX; i++)
                exec_holds_note_allowed(h, &(RecentExec) { .key = b, .pid = 2, .usec = 100 + i });
        ASSERT_EQ(exec_holds_recent(h, &a, 50, out, EXEC_RECENT_MAX), -EOVERFLOW);
        ASSERT_EQ(exec_holds_recent(h, &a, 101, out, EXEC_RECENT_MAX), 0);
}

int main(void) {
        RUN(holds);
        RUN(recent);
        RUN(ring_overflow);
        return EXIT_SUCCESS;
}
