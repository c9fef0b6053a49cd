/*
 * Internals shared by routes.c (endpoints, non-streaming answers) and sse.c
 * (streaming answers): the server object and a generation "job" that turns
 * engine events into OpenAI choices. A job belongs to the HTTP thread that
 * serves its request (for a stream: the connection's thread that runs the
 * reader callback).
 */
#ifndef HY_SERVER_SERVER_IMPL_H
#define HY_SERVER_SERVER_IMPL_H

#include "server/http.h"
#include "server/metrics.h"
#include "server/server.h"

#include <stdatomic.h>

struct hy_server {
    hy_server_config cfg;
    char *api_key;
    char *model_name;
    hy_engine *engine;
    hy_server_text text;
    hy_gen_defaults defaults;
    hy_http *http;
    hy_http_counters counters;
    uint64_t id_seed;
    atomic_ullong id_counter;
    atomic_bool draining;
};

typedef struct hy_job_choice {
    hy_oai_choice out;       /* accumulated (non-streaming) or bookkeeping (streaming) */
    void *parser;
    bool role_sent;
    bool finished;
    json_t *pending_lp;      /* streaming chat: logprob entries not yet sent */
    json_t *pending_clp;     /* streaming completions: logprobs object not yet sent */
    size_t text_offset;      /* completions: bytes of text so far */
} hy_job_choice;

typedef struct hy_job {
    hy_server *srv;
    hy_oai_request req;
    hy_request *ereq;
    char id[64];
    long created;
    int n_prompt;
    int n;
    hy_job_choice *ch;       /* [n] */
    hy_oai_usage usage;
    bool done;
    bool failed;             /* a choice ended with an engine error */
    char error[512];
    int fd;
    /* streaming */
    bool stream;
    char *buf;               /* SSE bytes not yet handed to MHD */
    size_t len, off, cap;
    bool eof;                /* [DONE] queued: end after buf drains */
    double last_write;
    /* what the current event's deltas are attached to */
    const hy_event *cur;
} hy_job;

/* Applies one engine event to the job (accumulating, or emitting SSE chunks
 * when job->stream). */
void hy_job_on_event(hy_job *j, const hy_event *ev);
void hy_job_free(hy_job *j);
/* A random id like "call_<24 hex>" from the server's id sequence. */
void hy_server_make_id(hy_server *s, const char *prefix, int hex_digits, char *out, size_t cap);

#endif
