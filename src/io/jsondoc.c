/*
 * jsondoc.c - one strict JSON document from a buffer (jsondoc.h).
 */
#include "io/jsondoc.h"

#include <stdbool.h>

#include "util/jsonscan.h"

/* Line and column (1-based) of offset at in text. */
static void line_col(const char *text, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t k = 0; k < at; k++) {
        if (text[k] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

/* The offset of the first comment (// or slash-star) outside the strings of
 * text[0..len), or len if there is none (strings found by their quotes,
 * honouring backslash escapes). */
static size_t first_comment(const char *text, size_t len)
{
    bool in_string = false;
    for (size_t k = 0; k < len; k++) {
        char c = text[k];
        if (in_string) {
            if (c == '\\')
                k++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '/' && k + 1 < len && (text[k + 1] == '/' || text[k + 1] == '*')) {
            return k;
        }
    }
    return len;
}

cJSON *nc_json_parse_doc(const char *text, size_t len, const char *path, int code,
                         const char *hint, nc_err *err)
{
    size_t bad_at;
    int line, col;
    bool inside = nc_json_raw_control(text, len, &bad_at);
    if (inside || nc_json_bad_space(text, len, &bad_at)) {
        line_col(text, bad_at, &line, &col);
        nc_err_set(err, code, "%s: malformed JSON at line %d, column %d: a raw control "
                   "character (byte 0x%02x) %s", path, line, col, (unsigned char)text[bad_at],
                   inside ? "inside a string (write it escaped)"
                          : "outside a string (expected JSON white space)");
        return NULL;
    }
    if (nc_json_escaped_nul(text, len, &bad_at)) {
        line_col(text, bad_at, &line, &col);
        nc_err_set(err, code, "%s: malformed JSON at line %d, column %d: the escape \\u0000 (a "
                   "NUL character) inside a string, expected text without NUL", path, line, col);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root) {
        /* only white space may follow the document */
        while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
            end++;
        if (end < text + len) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        size_t c = first_comment(text, len);
        if (c < len && c <= at) { /* what stopped the parser is (after) a comment */
            line_col(text, c, &line, &col);
            nc_err_set(err, code, "%s: malformed JSON at line %d, column %d: a comment ('%.2s'); "
                       "JSON has no comments (remove it)", path, line, col, text + c);
            return NULL;
        }
        line_col(text, at, &line, &col);
        nc_err_set(err, code, "%s: malformed JSON at line %d, column %d%s", path, line, col,
                   hint);
    }
    return root;
}
