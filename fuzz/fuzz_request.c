/* Fuzzes the server's reading of a request's fields: the input is a first
 * line "METHOD /api/...?query" (or an OpenAI route's, /v1/...) and the body after it. The body's strings are
 * checked (NUL, UTF-8), the body parsed as JSON, and its fields (a GET's
 * query as strings, checked for UTF-8 first) read with the table of the route the URL names, a
 * batch's requests each with theirs (api_check_fields: what every handler
 * runs before its work). Any input must end in one of two ways: taken (no
 * answer made), or refused with a 4xx whose body is a JSON object with an
 * "error" string, in UTF-8. */
#include "fuzz_util.h"

#include <string.h>

#include "server_internal.h"
#include "storylm/text.h"

/* A refusal: a 4xx, its body {"error": "...", ...} in UTF-8; for an
 * OpenAI route (openai) {"error": {"message": "...", "type": "...", ...}}. */
static void check_refusal(Reply *r, int openai) {
    FUZZ_ASSERT(r->status >= 400 && r->status < 500 && r->body);
    if (openai) openai_error_shape(r); /* as the server sends it */
    if (slm_utf8_validate(r->body, strlen(r->body), "the answer", NULL)) fprintf(stderr, "answer: %s\n", r->body);
    FUZZ_ASSERT(slm_utf8_validate(r->body, strlen(r->body), "the answer", NULL) == 0);
    cJSON *j = cJSON_Parse(r->body), *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (openai)
        FUZZ_ASSERT(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(err, "message")) &&
                    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(err, "type")));
    else
        FUZZ_ASSERT(cJSON_IsObject(j) && cJSON_IsString(err));
    cJSON_Delete(j);
}

/* "a=1&b&c=x" into obj as strings, as the server gets a GET's arguments (the first of a name kept). */
static void add_query(cJSON *obj, char *query) {
    for (char *field = strtok(query, "&"); field; field = strtok(NULL, "&")) {
        char *eq = strchr(field, '=');
        if (eq) *eq = '\0';
        if (!cJSON_GetObjectItemCaseSensitive(obj, field)) cJSON_AddStringToObject(obj, field, eq ? eq + 1 : "");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *nl = memchr(text, '\n', size);
    size_t head = nl ? (size_t)(nl - text) : size;
    if (head > 4096 || memchr(text, 0, head)) return 0; /* a request line the server would not take */
    char line[4097];
    memcpy(line, text, head);
    line[head] = '\0';
    int get = strncmp(line, "GET ", 4) == 0;
    if (!get && strncmp(line, "POST ", 5) != 0) return 0;
    char *url = line + (get ? 4 : 5), *query = strchr(url, '?');
    if (query) *query++ = '\0';
    const char *body_text = nl ? nl + 1 : text + size;
    size_t len = size - (size_t)(body_text - text);
    Reply r = {0};
    cJSON *body = NULL;
    if (!get && len > 0) {
        if (body_check_strings(body_text, len, &r)) {
            check_refusal(&r, openai_owns(url));
            free(r.body);
            return 0;
        }
        body = cJSON_ParseWithLength(body_text, len);
        if (!cJSON_IsObject(body)) { /* the server answers 400 itself */
            cJSON_Delete(body);
            return 0;
        }
    }
    if (!body) body = cJSON_CreateObject();
    if (get && query) add_query(body, query);
    int openai = openai_owns(url); /* /v1/..., /tokenize, /detokenize, /tokenizer_info, /metrics */
    if ((get && query_check_strings(body, &r)) ||
        (openai ? openai_check_fields(url, get, body, &r) : api_check_fields(url, get, body, 0, &r)))
        check_refusal(&r, openai);
    else
        FUZZ_ASSERT(r.body == NULL && r.status == 0);
    free(r.body);
    cJSON_Delete(body);
    return 0;
}
