/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "record/exec-holds.h"

int exec_holds_add(ExecHolds *h, const FileKey *key) {
        if (exec_holds_has(h, key))
                return -EEXIST;
        if (h->n_held >= EXEC_HOLDS_MAX)
                return -ENOSPC;
        h->held[h->n_held++] = *key;
        return 0;
}

int exec_holds_remove(ExecHolds *h, const FileKey *key) {
        for (size_t i = 0; i < h->n_held; i++)
                if (file_key_equal(&h->held[i], key)) {
                        h->held[i] = h->held[--h->n_held];
                        return 0;
                }
        return -ENOENT;
}

bool exec_holds_has(const ExecHolds *h, const FileKey *key) {
        for (size_t i = 0; i < h->n_held; i++)
                if (file_key_equal(&h->held[i], key))
                        return true;
        return false;
}

void exec_holds_note_allowed(ExecHolds *h, const RecentExec *e) {
        h->recent[h->next_recent] = *e;
        h->next_recent = (h->next_recent + 1) % EXEC_RECENT_MAX;
        if (h->n_recent < EXEC_RECENT_MAX)
                h->n_recent++;
}

int exec_holds_recent(const ExecHolds *h, const FileKey *key, uint64_t since_usec, RecentExec *ret, size_t max) {
        size_t n = 0, k;

        for (k = 1; k <= h->n_recent; k++) {
                const RecentExec *e = &h->recent[(h->next_recent + EXEC_RECENT_MAX - k) % EXEC_RECENT_MAX];

                if (e->usec < since_usec)
                        return (int) n;         /* older ones are older still */
                if (file_key_equal(&e->key, key)) {
                        if (n >= max)
                                return -EOVERFLOW;
                        ret[n++] = *e;
                }
        }
        /* every entry is recent: the ring is full of the last moments, or holds all there were */
        return h->n_recent == EXEC_RECENT_MAX ? -EOVERFLOW : (int) n;
}
