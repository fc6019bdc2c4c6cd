/* text.c - the text of synor serve's answers: UTF-8 that is whole enough
 * to send, JSON strings, error bodies, finish reasons, logprobs entries,
 * stop sequences found in the text. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_api.h"
#include "synor/llm.h"

/* Length of the well-formed UTF-8 character at p (Unicode table 3-7), or
 * 0 when ill-formed; *maximal gets the length of the maximal subpart (the
 * bytes replaced by one U+FFFD), *incomplete whether it only ran out of
 * input. */
static size_t utf8_char(const unsigned char *p, size_t n, size_t *maximal, int *incomplete)
{
    unsigned char c = p[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    *incomplete = 0;
    *maximal = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    for (size_t i = 1; i < need; i++) {
        if (i >= n) {
            *incomplete = 1;
            *maximal = i;
            return 0;
        }
        unsigned char b = p[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
            *maximal = i;
            return 0;
        }
    }
    return need;
}

size_t synor__serve_utf8_ready(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t maximal;
        int incomplete;
        size_t k = utf8_char(p + i, n - i, &maximal, &incomplete);
        if (!k && incomplete)
            return i;
        i += k ? k : maximal;
    }
    return n;
}

void synor__serve_json_text(synor__buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    synor__buf_append(b, "\"", 1);
    size_t run = 0, i = 0;
    while (i < n) {
        size_t maximal;
        int incomplete;
        size_t k = utf8_char(p + i, n - i, &maximal, &incomplete);
        const char *esc = NULL;
        char tmp[8];
        if (k == 1) {
            switch (p[i]) {
            case '"': esc = "\\\""; break;
            case '\\': esc = "\\\\"; break;
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            default:
                if (p[i] < 0x20 || p[i] == 0x7F) {
                    snprintf(tmp, sizeof tmp, "\\u%04x", p[i]);
                    esc = tmp;
                }
            }
        } else if (!k) {
            esc = "\xEF\xBF\xBD"; /* U+FFFD */
            k = maximal;
        }
        if (esc) {
            synor__buf_append(b, s + run, i - run);
            synor__buf_puts(b, esc);
            run = i + k;
        }
        i += k;
    }
    synor__buf_append(b, s + run, n - run);
    synor__buf_append(b, "\"", 1);
}

char *synor__serve_error_json(int status, const char *msg)
{
    const char *type = status == 404   ? "not_found_error"
                       : status == 405 ? "method_not_allowed"
                       : status == 503 ? "overloaded"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"error\":{\"message\":");
    synor__serve_json_text(&b, msg, strlen(msg));
    synor__buf_printf(&b, ",\"type\":\"%s\",\"code\":%d}}\n", type, status);
    return synor__buf_take(&b);
}

const char *synor__serve_finish_reason(int reason)
{
    switch (reason) {
    case SYNOR_LLM_DONE_EOS:
    case SYNOR_LLM_DONE_STOPPED:
        return "stop";
    case SYNOR_LLM_DONE_LENGTH:
    case SYNOR_LLM_DONE_CONTEXT:
        return "length";
    default:
        return "cancelled";
    }
}

void synor__serve_lp_compute(const float *l, int V, int32_t token, int top, synor__serve_lp *e)
{
    float mx = l[0];
    for (int i = 1; i < V; i++)
        mx = l[i] > mx ? l[i] : mx;
    double sum = 0;
    for (int i = 0; i < V; i++)
        sum += exp((double)(l[i] - mx));
    float lse = mx + (float)log(sum);
    top = top < SYNOR__SERVE_LP_TOP ? top : SYNOR__SERVE_LP_TOP;
    e->id = token;
    e->lp = l[token] - lse;
    e->ntop = 0;
    for (int i = 0; i < V && top > 0; i++) { /* insertion into the sorted few */
        float v = l[i] - lse;
        if (e->ntop == top && v <= e->top[e->ntop - 1])
            continue;
        int j = e->ntop < top ? e->ntop++ : e->ntop - 1;
        for (; j > 0 && e->top[j - 1] < v; j--) {
            e->top[j] = e->top[j - 1];
            e->top_id[j] = e->top_id[j - 1];
        }
        e->top[j] = v;
        e->top_id[j] = i;
    }
}

size_t synor__serve_stop_find(char *const *stop, int n, const char *p, size_t len, size_t from)
{
    size_t best = SIZE_MAX;
    for (int i = 0; i < n && p; i++) {
        size_t m = strlen(stop[i]);
        for (size_t at = from + 1 > m ? from + 1 - m : 0; at + m <= len && at < best; at++)
            if (!memcmp(p + at, stop[i], m)) {
                best = at;
                break;
            }
    }
    return best;
}

size_t synor__serve_stop_tail(char *const *stop, int n, const char *p, size_t len)
{
    size_t keep = 0;
    for (int i = 0; i < n && p; i++) {
        size_t m = strlen(stop[i]);
        for (size_t l = m - 1 < len ? m - 1 : len; l > keep; l--)
            if (!memcmp(p + len - l, stop[i], l)) {
                keep = l;
                break;
            }
    }
    return keep;
}

/* A token's bytes as a JSON array of numbers (chat's "bytes"). */
static void json_bytes(synor__buf *b, const char *p, size_t n)
{
    synor__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++)
        synor__buf_printf(b, "%s%u", i ? "," : "", (unsigned)(unsigned char)p[i]);
    synor__buf_puts(b, "]");
}

void synor__serve_lp_json(synor__buf *b, int chat, const synor_tokenizer *tok,
                          const synor__serve_lp *lp, size_t nlp, const char *text, size_t tl)
{
    size_t n = 0;
    while (n < nlp && (lp[n].offset < tl || (lp[n].len == 0 && lp[n].offset <= tl)))
        n++;
    char alt[256];
    if (chat) {
        synor__buf_puts(b, ",\"logprobs\":{\"content\":[");
        for (size_t i = 0; i < n; i++) {
            const synor__serve_lp *e = &lp[i];
            size_t len = e->offset + e->len <= tl ? e->len : tl - e->offset;
            synor__buf_puts(b, i ? ",{\"token\":" : "{\"token\":");
            synor__serve_json_text(b, text + e->offset, len);
            synor__buf_printf(b, ",\"logprob\":%.7g,\"bytes\":", (double)e->lp);
            json_bytes(b, text + e->offset, len);
            synor__buf_puts(b, ",\"top_logprobs\":[");
            for (int j = 0; j < e->ntop; j++) {
                long k = synor_tokenizer_decode(tok, e->prev, e->top_id[j], alt, sizeof alt);
                size_t kl = k < 0 ? 0 : (size_t)k < sizeof alt ? (size_t)k : sizeof alt;
                synor__buf_puts(b, j ? ",{\"token\":" : "{\"token\":");
                synor__serve_json_text(b, alt, kl);
                synor__buf_printf(b, ",\"logprob\":%.7g,\"bytes\":", (double)e->top[j]);
                json_bytes(b, alt, kl);
                synor__buf_puts(b, "}");
            }
            synor__buf_puts(b, "]}");
        }
        synor__buf_puts(b, "]}");
        return;
    }
    synor__buf_puts(b, ",\"logprobs\":{\"tokens\":[");
    for (size_t i = 0; i < n; i++) {
        const synor__serve_lp *e = &lp[i];
        if (i)
            synor__buf_puts(b, ",");
        synor__serve_json_text(b, text + e->offset,
                               e->offset + e->len <= tl ? e->len : tl - e->offset);
    }
    synor__buf_puts(b, "],\"token_logprobs\":[");
    for (size_t i = 0; i < n; i++)
        synor__buf_printf(b, "%s%.7g", i ? "," : "", (double)lp[i].lp);
    synor__buf_puts(b, "],\"top_logprobs\":[");
    for (size_t i = 0; i < n; i++) {
        const synor__serve_lp *e = &lp[i];
        synor__buf_puts(b, i ? ",{" : "{");
        for (int j = 0; j < e->ntop; j++) {
            long k = synor_tokenizer_decode(tok, e->prev, e->top_id[j], alt, sizeof alt);
            if (j)
                synor__buf_puts(b, ",");
            synor__serve_json_text(b, alt,
                                   k < 0 ? 0 : (size_t)k < sizeof alt ? (size_t)k : sizeof alt);
            synor__buf_printf(b, ":%.7g", (double)e->top[j]);
        }
        synor__buf_puts(b, "}");
    }
    synor__buf_puts(b, "],\"text_offset\":[");
    for (size_t i = 0; i < n; i++)
        synor__buf_printf(b, "%s%zu", i ? "," : "", lp[i].offset);
    synor__buf_puts(b, "]}");
}
