/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <stdlib.h>

#include "common/macro.h"
#include "prefetch/prefetch-profile.h"

void prefetch_profile_done(PrefetchProfile *p) {
        free(p->files);
        free(p->data);
        free(p->metadata);
        *p = (PrefetchProfile) {};
}

int prefetch_profile_load(Db *db, const char *name, uint64_t fsid, PrefetchProfile *ret) {
        _cleanup_free_ DbProfileRange *ranges = NULL;
        _cleanup_free_ DbMetaRange *meta = NULL;
        _cleanup_free_ uint32_t *index = NULL;        /* profile file -> input file, UINT32_MAX: elsewhere */
        DbProfileFile *files = NULL;
        size_t n_files = 0, n_ranges = 0, n_meta = 0;
        PrefetchProfile p = {};
        ProfileKind kind;
        int r;

        r = db_get_profile(db, name, &kind, &files, &n_files);
        if (r < 0)
                return r;
        r = db_get_profile_ranges(db, name, files, n_files, &ranges, &n_ranges);
        if (r >= 0)
                r = db_get_profile_metadata(db, name, &meta, &n_meta);
        if (r < 0)
                goto out;
        r = -ENOMEM;
        index = malloc(MAX(n_files, (size_t) 1) * sizeof *index);
        p.files = calloc(MAX(n_files, (size_t) 1), sizeof *p.files);
        p.data = calloc(MAX(n_ranges, (size_t) 1), sizeof *p.data);
        p.metadata = calloc(MAX(n_meta, (size_t) 1), sizeof *p.metadata);
        if (!index || !p.files || !p.data || !p.metadata)
                goto out;
        for (size_t i = 0; i < n_files; i++) {
                if (files[i].file.key.fsid != fsid) {
                        index[i] = UINT32_MAX;
                        continue;
                }
                index[i] = (uint32_t) p.input.n_files;
                p.files[p.input.n_files++] = (PrefetchFile) { .key = files[i].file.key,
                                                              .size = files[i].file.size };
        }
        for (size_t i = 0; i < n_ranges; i++) {
                if (index[ranges[i].file] == UINT32_MAX || ranges[i].length == 0)
                        continue;
                p.data[p.input.n_data++] = (PrefetchSpan) { .file = index[ranges[i].file],
                                                            .offset = ranges[i].offset,
                                                            .length = ranges[i].length };
        }
        for (size_t i = 0; i < n_meta; i++)
                if (meta[i].fsid == fsid && meta[i].length > 0)
                        p.metadata[p.input.n_metadata++] = (PrefetchSpan) { .offset = meta[i].offset,
                                                                            .length = meta[i].length };
        p.input.files = p.files;
        p.input.data = p.data;
        p.input.metadata = p.metadata;
        *ret = p;
        p = (PrefetchProfile) {};
        r = 0;
out:
        prefetch_profile_done(&p);
        db_profile_files_free(files, n_files);
        return r;
}
