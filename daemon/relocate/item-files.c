/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relocate/item-files.h"
#include "common/macro.h"

typedef struct KeyIndex {
        const FileKey *key;
        size_t i;
} KeyIndex;

static int cmp_key_index(const void *a, const void *b) {
        const KeyIndex *x = a, *y = b;
        int c;

        if (x->key->fsid != y->key->fsid)
                return x->key->fsid < y->key->fsid ? -1 : 1;
        if (x->key->handle_type != y->key->handle_type)
                return x->key->handle_type < y->key->handle_type ? -1 : 1;
        if (x->key->handle_len != y->key->handle_len)
                return x->key->handle_len < y->key->handle_len ? -1 : 1;
        c = memcmp(x->key->handle, y->key->handle, MIN(x->key->handle_len, (uint32_t) FID_HANDLE_MAX));
        if (c != 0)
                return c;
        return x->i < y->i ? -1 : x->i > y->i;
}

int move_items_files(const MoveItem *items, size_t n, size_t **ret_slot, size_t *ret_n_files) {
        _cleanup_free_ KeyIndex *k = NULL;
        _cleanup_free_ size_t *first = NULL, *slot = NULL;
        size_t n_files = 0;

        if (n == 0) {
                *ret_slot = NULL;
                *ret_n_files = 0;
                return 0;
        }
        k = calloc(n, sizeof *k);
        first = calloc(n, sizeof *first);
        slot = calloc(n, sizeof *slot);
        if (!k || !first || !slot)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                k[i] = (KeyIndex) { &items[i].key, i };
        qsort_safe(k, n, sizeof *k, cmp_key_index);
        /* first[i]: the lowest index of item i's file (a group's first entry, as equal keys sort by index) */
        for (size_t g = 0, j = 0; j < n; j++) {
                if (cmp_key_index(&(KeyIndex) { k[g].key, 0 }, &(KeyIndex) { k[j].key, 0 }) != 0)
                        g = j;
                first[k[j].i] = k[g].i;
        }
        /* numbered in the order of each file's first item; first[i] <= i, so it is numbered already */
        for (size_t i = 0; i < n; i++)
                slot[i] = first[i] == i ? n_files++ : slot[first[i]];
        *ret_slot = TAKE_PTR(slot);
        *ret_n_files = n_files;
        return 0;
}
