/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A picture of a profile's physical layout as a self-contained SVG document: two panels side by side,
 * "before" and "after (now)". x is the access order (file index in profile order), y the physical position
 * on the device; every extent is a thin bar at its file's x spanning its physical range, and consecutive
 * extents are joined by a thin line, so every seek shows as a jump. Both panels show the same part of the
 * device on the same scale (zoomed to the extents of both), so a layout that got more compact looks
 * shorter. In each, the hot region (the lowest to the highest byte of the panel's extents) is a band across
 * the plot, its size written under it, and a thin strip right of the plot is the whole device with the hot
 * region and the part the plot shows marked. No I/O other than writing to the given stream, so it can be
 * tested on made-up arrays. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct SvgExtent {
        uint32_t file;          /* index of the file in profile order */
        uint64_t offset;        /* physical byte offset on the device */
        uint64_t length;        /* bytes */
} SvgExtent;

typedef struct SvgPanel {
        const char *title;      /* "before", "after (now)" */
        const char *subtitle;   /* e.g. "12 extents, 3 discontinuities, 41.0 ms modeled"; NULL for none */
        const char *empty;      /* shown instead of a plot when n == 0, e.g. "no 'before' layout recorded" */
        const SvgExtent *extents;
        size_t n;
} SvgPanel;

/* Writes the document for profile (any bytes: escaped for XML, invalid UTF-8 replaced). n_files is the
 * width of the x axis (the profile's file count; widened to one more than the largest file index in
 * either panel if that is more). device is the size of the filesystem's device in bytes (the whole-device
 * strips reach at least to the end of every extent); 0 for unknown: no strips. Flushes f. Returns 0,
 * -ENOMEM, or the negative errno of a failed write (-EIO when the stream does not say). */
int svg_write_layout(FILE *f, const char *profile, uint64_t device, uint32_t n_files,
                     const SvgPanel *before, const SvgPanel *now);

/* Writes s as XML character data or attribute value: & < > " ' escaped, characters XML 1.0 does not allow
 * (control characters other than tab, newline and carriage return) and bytes that are not well-formed
 * UTF-8 written as U+FFFD. */
void svg_write_escaped(FILE *f, const char *s);
