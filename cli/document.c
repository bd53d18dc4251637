/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc-util.h"
#include "cli/document.h"
#include "common/escape.h"

typedef enum DocKind {
        DOC_FIELD,
        DOC_OBJECT,
        DOC_STRV,
        DOC_TABLE,
        DOC_LINE,
} DocKind;

struct DocNode {
        DocKind kind;
        DocFlags flags;
        char *label;            /* as shown: escaped; NULL: none */
        char *key;              /* NULL: not in JSON */
        Cell value;             /* a field's value; of the other kinds, only the text they show */
        DocNode *parent;
        DocNode **children;     /* DOC_OBJECT */
        size_t n_children, allocated_children;
        char **strv;            /* DOC_STRV */
        size_t n_strv;
        Table *table;           /* DOC_TABLE */
        DocTableText how;
        int error;              /* of a root: the first failure of building the document */
};

DocNode *doc_free(DocNode *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_children; i++)
                doc_free(d->children[i]);
        free(d->children);
        for (size_t i = 0; i < d->n_strv; i++)
                free(d->strv[i]);
        free(d->strv);
        table_free(d->table);
        cell_done(&d->value);
        free(d->label);
        free(d->key);
        free(d);
        return NULL;
}

static DocNode *node_new(DocKind kind, const char *label, const char *key) {
        _cleanup_(doc_freep) DocNode *n = calloc(1, sizeof *n);

        if (!n)
                return NULL;
        n->kind = kind;
        if (cell_null(&n->value) < 0)
                return NULL;
        if (label && !(n->label = text_escape(label)))
                return NULL;
        if (key && !(n->key = strdup(key)))
                return NULL;
        return TAKE_PTR(n);
}

DocNode *doc_new(void) {
        return node_new(DOC_OBJECT, NULL, NULL);
}

/* Remembers the first failure in the document's root; returns r. */
static int doc_fail(DocNode *o, int r) {
        while (o->parent)
                o = o->parent;
        if (o->error == 0)
                o->error = r;
        return r;
}

/* Appends n (taken over) to object o. */
static int doc_append(DocNode *o, DocNode *n) {
        if (!n)
                return doc_fail(o, -ENOMEM);
        if (GREEDY_REALLOC(o->children, o->allocated_children, o->n_children + 1) < 0) {
                doc_free(n);
                return doc_fail(o, -ENOMEM);
        }
        n->parent = o;
        o->children[o->n_children++] = n;
        return 0;
}

/* Appends a field of the value a cell_*() call returning r made (taken over). */
static int doc_add_field(DocNode *o, const char *label, const char *key, Cell *value, int r) {
        DocNode *n;

        if (r < 0)
                return doc_fail(o, r);
        n = node_new(DOC_FIELD, label, key);
        if (n) {
                cell_done(&n->value);
                n->value = *value;
        } else
                cell_done(value);
        return doc_append(o, n);
}

/* Each: o is NULL where doc_add_object() failed, which is remembered already. */

int doc_add_string(DocNode *o, const char *label, const char *key, const char *s) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_string(&c, s)) : -ENOMEM;
}

int doc_add_uint(DocNode *o, const char *label, const char *key, uint64_t u) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_uint(&c, u)) : -ENOMEM;
}

int doc_add_bytes(DocNode *o, const char *label, const char *key, uint64_t bytes) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_bytes(&c, bytes)) : -ENOMEM;
}

int doc_add_timestamp(DocNode *o, const char *label, const char *key, uint64_t usec) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_timestamp(&c, usec)) : -ENOMEM;
}

int doc_add_timespan(DocNode *o, const char *label, const char *key, uint64_t usec) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_timespan(&c, usec)) : -ENOMEM;
}

int doc_add_bool(DocNode *o, const char *label, const char *key, bool b) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_bool(&c, b)) : -ENOMEM;
}

int doc_add_double(DocNode *o, const char *label, const char *key, double d, unsigned decimals) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_double(&c, d, decimals)) : -ENOMEM;
}

int doc_add_null(DocNode *o, const char *label, const char *key) {
        Cell c;
        return o ? doc_add_field(o, label, key, &c, cell_null(&c)) : -ENOMEM;
}

int doc_add_strv(DocNode *o, const char *label, const char *key, const char *const *strv, size_t n) {
        _cleanup_(doc_freep) DocNode *node = NULL;
        _cleanup_free_ char *joined = NULL;
        size_t len = 1;
        char *p;

        if (!o)
                return -ENOMEM;
        node = node_new(DOC_STRV, label, key);
        if (!node || !(node->strv = calloc(n + 1, sizeof *node->strv)))
                return doc_fail(o, -ENOMEM);
        for (size_t i = 0; i < n; i++) {
                if (!(node->strv[i] = strdup(strv[i])))
                        return doc_fail(o, -ENOMEM);
                node->n_strv++;
                len += strlen(strv[i]) + 2;
        }
        p = joined = malloc(len);
        if (!joined)
                return doc_fail(o, -ENOMEM);
        *p = 0;
        for (size_t i = 0; i < n; i++)
                p = stpcpy(stpcpy(p, i > 0 ? ", " : ""), strv[i]);
        if (cell_set_text(&node->value, joined) < 0)
                return doc_fail(o, -ENOMEM);
        return doc_append(o, TAKE_PTR(node));
}

DocNode *doc_add_object(DocNode *o, const char *label, const char *key) {
        DocNode *n;

        if (!o)
                return NULL;
        n = node_new(DOC_OBJECT, label, key);
        return doc_append(o, n) < 0 ? NULL : n;
}

int doc_add_table(DocNode *o, const char *label, const char *key, Table *t, DocTableText how) {
        DocNode *n;

        if (!o)
                return -ENOMEM;
        if (!t || how < 0 || how >= _DOC_TABLE_TEXT_MAX)
                return doc_fail(o, t ? -EINVAL : -ENOMEM);
        n = node_new(DOC_TABLE, label, key);
        if (n) {
                n->table = table_ref(t);
                n->how = how;
        }
        return doc_append(o, n);
}

/* vasprintf() that returns the string, NULL on failure. */
static char *vformat(const char *format, va_list ap) {
        char *s;

        return vasprintf(&s, format, ap) < 0 ? NULL : s;
}

int doc_add_linef(DocNode *o, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        DocNode *n;
        va_list ap;

        if (!o)
                return -ENOMEM;
        va_start(ap, format);
        s = vformat(format, ap);
        va_end(ap);
        n = s ? node_new(DOC_LINE, NULL, NULL) : NULL;
        if (n && cell_set_text(&n->value, s) < 0)
                n = doc_free(n);
        return doc_append(o, n);
}

int doc_set_textf(DocNode *o, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        if (!o)
                return -ENOMEM;
        if (o->n_children == 0)
                return doc_fail(o, -EINVAL);
        va_start(ap, format);
        s = vformat(format, ap);
        va_end(ap);
        if (!s || cell_set_text(&o->children[o->n_children - 1]->value, s) < 0)
                return doc_fail(o, -ENOMEM);
        return 0;
}

int doc_set_flags(DocNode *o, DocFlags flags) {
        if (!o)
                return -ENOMEM;
        if (o->n_children == 0)
                return doc_fail(o, -EINVAL);
        o->children[o->n_children - 1]->flags |= flags;
        return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* text */

/* A node that is a line of a "Key: value" block. */
static bool node_is_keyed_line(const DocNode *n) {
        if (!n->label)
                return false;
        return n->kind != DOC_LINE && (n->kind != DOC_TABLE || n->how == DOC_TABLE_ROWS);
}

static bool node_shows(const DocNode *n, bool legend) {
        if ((n->flags & DOC_LEGEND) && !legend)
                return false;
        switch (n->kind) {
        case DOC_FIELD:
        case DOC_OBJECT:
        case DOC_STRV:
                return n->label;
        case DOC_TABLE:
                return n->how != DOC_TABLE_HIDDEN && table_get_rows(n->table) > 0;
        default:
                return true;
        }
}

static int doc_print_object(const DocNode *o, FILE *f, bool legend) {
        size_t width = 0;
        int r;

        for (size_t i = 0; i < o->n_children; i++)
                if (node_is_keyed_line(o->children[i]))
                        width = MAX(width, utf8_columns(o->children[i]->label));

        for (size_t i = 0; i < o->n_children; i++) {
                const DocNode *n = o->children[i];
                size_t pad = n->label ? width - MIN(width, utf8_columns(n->label)) : 0;

                if (!node_shows(n, legend))
                        continue;
                if (n->flags & DOC_BLANK_LINE)
                        fputc('\n', f);

                if (n->kind == DOC_LINE)
                        fprintf(f, "%s\n", n->value.text);
                else if (n->kind != DOC_TABLE)
                        fprintf(f, "%*s%s%s%s\n", (int) pad, "", n->label, n->label[0] ? ": " : "  ", n->value.text);
                else if (n->how == DOC_TABLE_GRID) {
                        if (n->label && legend)
                                fprintf(f, "%s\n", n->label);
                        r = table_print(n->table, f, legend);
                        if (r < 0)
                                return r;
                } else {
                        _cleanup_free_ char *first = NULL, *next = NULL;

                        if (n->label && (asprintf(&first, "%*s%s%s", (int) pad, "", n->label,
                                                  n->label[0] ? ": " : "  ") < 0 ||
                                         asprintf(&next, "%*s", (int) width + 2, "") < 0))
                                return -ENOMEM;
                        r = table_print_indented(n->table, f, first ?: "", next ?: "");
                        if (r < 0)
                                return r;
                }
        }
        return ferror(f) ? -EIO : 0;
}

int doc_print(const DocNode *d, FILE *f, bool legend) {
        if (d->error < 0)
                return d->error;
        return doc_print_object(d, f, legend);
}

/* ---------------------------------------------------------------------------------------------------- */
/* JSON */

static int doc_write_json_object(const DocNode *o, JsonWriter *w) {
        int r;

        r = json_begin_object(w);
        for (size_t i = 0; r >= 0 && i < o->n_children; i++) {
                const DocNode *n = o->children[i];

                if (!n->key)
                        continue;
                r = json_key(w, n->key);
                if (r < 0)
                        break;
                switch (n->kind) {
                case DOC_FIELD:
                        r = cell_write_json(&n->value, w);
                        break;
                case DOC_OBJECT:
                        r = doc_write_json_object(n, w);
                        break;
                case DOC_STRV:
                        r = json_begin_array(w);
                        for (size_t j = 0; r >= 0 && j < n->n_strv; j++)
                                r = json_string(w, n->strv[j]);
                        if (r >= 0)
                                r = json_end_array(w);
                        break;
                case DOC_TABLE:
                        r = table_write_json(n->table, w);
                        break;
                default:
                        r = -EINVAL;
                }
        }
        return r < 0 ? r : json_end_object(w);
}

int doc_write_json(const DocNode *d, JsonWriter *w) {
        if (d->error < 0)
                return d->error;
        return doc_write_json_object(d, w);
}

static int nested_write_json(const void *nested, JsonWriter *w) {
        return doc_write_json(nested, w);
}

static void nested_free(void *nested) {
        doc_free(nested);
}

int table_add_object(Table *t, DocNode *o) {
        Cell c;
        int r;

        if (!o)
                return -ENOMEM;
        r = cell_nested(&c, o, nested_write_json, nested_free);
        return r < 0 ? r : table_add(t, &c);
}

static int rows_write_json(const void *nested, JsonWriter *w) {
        return table_write_json(nested, w);
}

static void rows_free(void *nested) {
        table_free(nested);
}

int table_add_rows(Table *t, Table *rows) {
        Cell c;
        int r;

        if (!rows)
                return -ENOMEM;
        r = cell_nested(&c, rows, rows_write_json, rows_free);
        return r < 0 ? r : table_add(t, &c);
}
