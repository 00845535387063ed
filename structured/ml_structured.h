/* legacy-ml structured output: JSON-schema constraints for a generation session (ml_session_options
 * .constraint, runtime/ml.h). The engine is structured/json_schema.h; the schema subset, the text it
 * allows and the cost are in docs/json-schema.md. Every function returns an ml_status; on failure
 * ml_last_error() holds one line naming the problem (a schema keyword outside the subset is named
 * with its JSON pointer, e.g. schema keyword "pattern" at /properties/name is not supported).
 *
 *   ml_json_vocab *v;      ml_json_vocab_new(ctx, &v);                       once per model
 *   ml_json_constraint *c; ml_json_constraint_new(v, schema, strlen(schema), &c);   per request
 *   opts.constraint = ml_json_constraint_get(c);  ...generate...  ml_json_constraint_free(c);
 */
#ifndef ML_STRUCTURED_H
#define ML_STRUCTURED_H

#include <stddef.h>

#include "runtime/ml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The context's tokenizer prepared for masks (its tokens' byte strings, sorted): ML_E_ARG without a
 * tokenizer, or naming the byte when the vocabulary lacks a single-byte token JSON text needs. */
typedef struct ml_json_vocab ml_json_vocab;
ml_status ml_json_vocab_new(const ml_ctx *ctx, ml_json_vocab **out);
void ml_json_vocab_free(ml_json_vocab *v); /* NULL is fine; after the constraints made from it */

/* The constraint of one generation: the text must be one JSON value valid under `schema` (JSON text
 * of n bytes); schema NULL = any JSON object (OpenAI's response_format json_object). */
typedef struct ml_json_constraint ml_json_constraint;
ml_status ml_json_constraint_new(const ml_json_vocab *v, const char *schema, size_t n, ml_json_constraint **out);
const ml_constraint *ml_json_constraint_get(ml_json_constraint *c); /* for ml_session_options.constraint */
void ml_json_constraint_reset(ml_json_constraint *c);               /* back to the empty text */
void ml_json_constraint_free(ml_json_constraint *c);                /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
