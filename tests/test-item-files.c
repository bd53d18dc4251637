/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Items grouped by file: a file's hot ranges are entries of their own, but a run counts files (moved_files,
 * Progress, the early pass's log), and "before" pictures gather all of a file's entries. */
#include <stdlib.h>
#include <string.h>

#include "relocate/item-files.h"
#include "common/macro.h"
#include "test-util.h"

static MoveItem item(uint64_t fsid, uint32_t ino) {
        MoveItem it = { .key = { .fsid = fsid, .handle_type = 1, .handle_len = 8 } };

        memcpy(it.key.handle, &ino, sizeof ino);
        return it;
}

/* A B A C B A: three files, numbered by their first entries; the same handle on another filesystem, or
 * with bytes past handle_len differing, is told apart / not */
TEST(grouping) {
        MoveItem it[] = { item(1, 10), item(1, 20), item(1, 10), item(2, 10), item(1, 20), item(1, 10) };
        const size_t want[] = { 0, 1, 0, 2, 1, 0 };
        size_t *slot = NULL, n_files = 0;

        it[5].key.handle[FID_HANDLE_MAX - 1] = 0x55;   /* past handle_len (8): not part of the key */
        ASSERT_OK(move_items_files(it, 6, &slot, &n_files));
        ASSERT_EQ(n_files, 3);
        for (size_t i = 0; i < 6; i++)
                ASSERT_EQ(slot[i], want[i]);
        free(slot);
}

TEST(one_and_none) {
        MoveItem it[] = { item(1, 10) };
        size_t *slot = NULL, n_files = 7;

        ASSERT_OK(move_items_files(it, 1, &slot, &n_files));
        ASSERT_EQ(n_files, 1);
        ASSERT_EQ(slot[0], 0);
        free(slot);
        slot = (size_t *) 1;
        ASSERT_OK(move_items_files(NULL, 0, &slot, &n_files));
        ASSERT_EQ(n_files, 0);
        ASSERT_TRUE(!slot);
}

/* many entries of few files, in an order qsort scrambles */
TEST(many) {
        enum { N = 5000, FILES = 7 };
        MoveItem *it = calloc(N, sizeof *it);
        size_t *slot = NULL, n_files = 0;

        ASSERT_TRUE(it);
        for (size_t i = 0; i < N; i++)
                it[i] = item(3, (uint32_t) ((i * 5 + 3) % FILES));
        ASSERT_OK(move_items_files(it, N, &slot, &n_files));
        ASSERT_EQ(n_files, FILES);
        for (size_t i = 0; i < N; i++)
                for (size_t j = i + 1; j < MIN((size_t) N, i + FILES + 1); j++)
                        ASSERT_EQ(slot[i] == slot[j], memcmp(it[i].key.handle, it[j].key.handle, 4) == 0);
        ASSERT_EQ(slot[0], 0);
        ASSERT_EQ(slot[1], 1);
        free(slot);
        free(it);
}

int main(void) {
        RUN(grouping);
        RUN(one_and_none);
        RUN(many);
        return EXIT_SUCCESS;
}
