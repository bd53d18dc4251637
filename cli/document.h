/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A document: what one seeklessctl command prints, built once and shown either as text or as one JSON
 * object. It is a tree: an object holds, in order, fields (typed values, see TableDataType), nested objects,
 * lists of strings, tables (output.h) and lines of text. Each node says once what it is called in the text
 * (its label) and in JSON (its key); a NULL label leaves a field out of the text, a NULL key leaves any
 * node out of JSON. Text and JSON show the nodes in the order they were added; a node the two show in
 * different places is added twice, once for each (a table can be: it is counted).
 *
 * As text, an object is a "Key: value" block: each field with a label, "Label: text" with the labels
 * right-aligned to the longest label of the block (as in hostnamectl's status), the text the field's
 * type's (output.h) unless doc_set_textf() set another. A list of strings with a label is one such line,
 * the strings joined by ", "; a nested object with a label too, its text set with doc_set_textf() (""
 * otherwise): its children are only in JSON. The label "" continues the line above: no key, the text
 * aligned under the value above. A
 * table shows nothing while it has no rows; see DocTableText for the rest. Lines of text are shown as
 * they are. All text is escaped as table cells are: control characters as \xNN, so a line stays one line.
 *
 * Building a document does not stop at the first failure: the document remembers it, and doc_print() and
 * doc_write_json() return it, so a builder can leave the checking to them. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/json.h"
#include "common/macro.h"
#include "cli/output.h"

typedef struct DocNode DocNode;

/* How a table shows in the text. */
typedef enum DocTableText {
        DOC_TABLE_HIDDEN,       /* not at all: only in JSON */
        DOC_TABLE_GRID,         /* with its header (when there is a legend); a label is a title line above it,
                                 * shown with the legend only */
        DOC_TABLE_ROWS,         /* its rows alone, one a line; with a label, the lines continue a "Key: value"
                                 * block: "Label: first row", then the next rows aligned under it (with
                                 * the label "", every row so) */
        _DOC_TABLE_TEXT_MAX,
        _DOC_TABLE_TEXT_INVALID = -EINVAL,
} DocTableText;

typedef enum DocFlags {
        DOC_LEGEND      = 1 << 0,       /* in the text only with the legend (not with --no-legend) */
        DOC_BLANK_LINE  = 1 << 1,       /* in the text, an empty line before it (when it shows anything) */
} DocFlags;

/* An empty object: a document, or an object a table cell holds (table_add_object()). NULL on OOM. */
DocNode *doc_new(void);
DocNode *doc_free(DocNode *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DocNode *, doc_free);

/* Fields of object o. A string is copied. */
int doc_add_string(DocNode *o, const char *label, const char *key, const char *s);
int doc_add_uint(DocNode *o, const char *label, const char *key, uint64_t u);
int doc_add_bytes(DocNode *o, const char *label, const char *key, uint64_t bytes);
int doc_add_timestamp(DocNode *o, const char *label, const char *key, uint64_t usec);
int doc_add_timespan(DocNode *o, const char *label, const char *key, uint64_t usec);
int doc_add_bool(DocNode *o, const char *label, const char *key, bool b);
int doc_add_double(DocNode *o, const char *label, const char *key, double d, unsigned decimals);
int doc_add_null(DocNode *o, const char *label, const char *key);
/* A JSON array of the n strings (copied). */
int doc_add_strv(DocNode *o, const char *label, const char *key, const char *const *strv, size_t n);
/* A nested object; NULL on OOM (remembered as any failure is). */
DocNode *doc_add_object(DocNode *o, const char *label, const char *key);
/* Takes a reference to t: the caller keeps its own. A table with a label and DOC_TABLE_ROWS counts for the
 * width of the labels of the block. */
int doc_add_table(DocNode *o, const char *label, const char *key, Table *t, DocTableText how);
/* A line of text, only in the text. */
int doc_add_linef(DocNode *o, const char *format, ...) _printf_(2, 3);

/* Shows the node added last to o as this text instead (a field's JSON value stays). */
int doc_set_textf(DocNode *o, const char *format, ...) _printf_(2, 3);
/* Sets flags on the node added last to o. */
int doc_set_flags(DocNode *o, DocFlags flags);

/* The document as text. Returns the first failure of building it, or -EIO. */
int doc_print(const DocNode *d, FILE *f, bool legend);
/* The document as one JSON object. Returns the first failure of building it, or what the writer returns. */
int doc_write_json(const DocNode *d, JsonWriter *w);

/* A table cell holding object o (taken over, freed also on failure; NULL: -ENOMEM, so that the result of a
 * function making the object can be passed on), written in JSON as o is. Its text is "" until
 * table_set_textf(). */
int table_add_object(Table *t, DocNode *o);
/* A table cell holding table rows (taken over, freed also on failure; NULL: -ENOMEM), written in JSON as
 * the array of their objects (table_write_json()). Its text is "" until table_set_textf(). */
int table_add_rows(Table *t, Table *rows);
