/* tokenize --json as a cJSON array: see views.h. */
#include "storylm/views.h"

cJSON *slm_view_tokens_json(const Tokenizer *t, const int32_t *ids, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "piece", t->pieces[ids[i]]) ||
            !cJSON_AddNumberToObject(o, "id", ids[i])) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}
