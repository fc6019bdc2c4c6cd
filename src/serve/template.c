/* template.c - the chat templates synor serve renders a conversation with.
 *
 * A chat model is trained on one way of writing a conversation, which its
 * GGUF file gives as a Jinja text (tokenizer.chat_template). synor serve
 * does not run Jinja: as llama.cpp's built-in templates do, it recognises
 * the families Llama-architecture models with SentencePiece vocabularies
 * use by their markers, and writes them itself:
 *   chatml  "<|im_start|>" (OpenHermes, TinyLlama-Chat v0.x, ...):
 *           <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
 *   llama2  "[INST]" (Llama-2-chat, Mistral-Instruct, CodeLlama-Instruct):
 *           [INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] ANSWER </s><s>[INST] ...
 *           with the variants the Jinja text shows: a system block
 *           ("<<SYS>>"; else the system text opens the first turn), a
 *           space around answers ("' ' + eos_token"), BOS before each later
 *           turn ("bos_token + '[INST]"), contents stripped ("strip()");
 *   zephyr  "<|user|>" (Zephyr, TinyLlama-Chat v1.0):
 *           <|ROLE|>\nCONTENT</s>\n ... <|assistant|>\n (the turn's end: the
 *           EOS piece where the Jinja text ends turns with eos_token,
 *           else <|endoftext|>);
 *   plain   everything else: ROLE: CONTENT\n ... assistant: (the template
 *           synor serve always used; the tiny models it builds know it).
 * Roles: "developer" is written as "system"; "tool" as itself in chatml
 * and plain, as a user turn in llama2 and zephyr. */
#include <stdio.h>
#include <string.h>

#include "serve/serve_api.h"

static const char *const kinds[] = {"plain", "chatml", "llama2", "zephyr"};

int synor__serve_tmpl_pick(const char *name, const char *jinja, const char *eos,
                           synor__serve_tmpl *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->eos, sizeof out->eos, "%s", eos ? eos : "</s>");
    int kind = -1;
    if (name && strcmp(name, "auto")) {
        for (int i = 0; i < (int)(sizeof kinds / sizeof *kinds); i++)
            if (!strcmp(name, kinds[i]))
                kind = i;
        if (kind < 0)
            return synor__error(SYNOR_EINVAL,
                                "chat template \"%s\" is not one of auto, plain, chatml, "
                                "llama2, zephyr",
                                name);
    } else if (!jinja) {
        kind = SYNOR__TMPL_PLAIN;
    } else if (strstr(jinja, "<|im_start|>")) {
        kind = SYNOR__TMPL_CHATML;
    } else if (strstr(jinja, "[INST]")) {
        kind = SYNOR__TMPL_LLAMA2;
    } else if (strstr(jinja, "<|user|>")) {
        kind = SYNOR__TMPL_ZEPHYR;
    } else {
        kind = SYNOR__TMPL_PLAIN;
    }
    out->kind = kind;
    if (kind == SYNOR__TMPL_LLAMA2) { /* the variants; a named template: Llama-2-chat's */
        out->sys = !jinja || strstr(jinja, "<<SYS>>") != NULL;
        out->space = !jinja || strstr(jinja, "' ' + eos_token") != NULL;
        out->bos_turns = !jinja || strstr(jinja, "bos_token + '[INST]") != NULL;
        out->strip = jinja && strstr(jinja, "strip()") != NULL;
    }
    if (kind == SYNOR__TMPL_ZEPHYR && jinja && !strstr(jinja, "eos_token"))
        snprintf(out->eos, sizeof out->eos, "<|endoftext|>");
    return 0;
}

const char *synor__serve_tmpl_name(const synor__serve_tmpl *t) { return kinds[t->kind]; }

int synor__serve_tmpl_for_model(const synor_llm *m, const char *name, synor__serve_tmpl *out)
{
    const synor_tokenizer *tk = synor_llm_tokenizer(m);
    size_t el = 0;
    const char *eos = synor_tokenizer_piece(tk, synor_tokenizer_eos(tk), &el);
    char eosb[32];
    snprintf(eosb, sizeof eosb, "%.*s", eos && el < sizeof eosb ? (int)el : 4,
             eos && el < sizeof eosb ? eos : "</s>");
    return synor__serve_tmpl_pick(name, synor_llm_chat_template(m), eosb, out);
}

int synor__serve_tmpl_turn_ends(const synor__serve_tmpl *t, const synor_llm *m, int32_t out[2])
{
    const synor_tokenizer *tk = synor_llm_tokenizer(m);
    int32_t ends[2] = {-1, synor_llm_eot(m)};
    int n = 0;
    if (t->kind == SYNOR__TMPL_CHATML)
        ends[0] = synor_tokenizer_find(tk, "<|im_end|>", 10);
    else if (t->kind != SYNOR__TMPL_PLAIN)
        ends[0] = synor_tokenizer_find(tk, t->eos, strlen(t->eos));
    for (int i = 0; i < 2; i++)
        if (ends[i] >= 0 && ends[i] != synor_tokenizer_eos(tk) && (n == 0 || out[0] != ends[i]))
            out[n++] = ends[i];
    return n;
}

/* content[0..len) without the blanks at its ends when t strips */
static void content_of(const synor__serve_tmpl *t, const char **c, size_t *len)
{
    if (!t->strip)
        return;
    while (*len && strchr(" \t\n\r", (*c)[0]))
        (*c)++, (*len)--;
    while (*len && strchr(" \t\n\r", (*c)[*len - 1]))
        (*len)--;
}

void synor__serve_tmpl_message(const synor__serve_tmpl *t, synor__buf *b, const char *role,
                               const char *content, size_t len, int *turn)
{
    if (!strcmp(role, "developer"))
        role = "system";
    int user = !strcmp(role, "user") || (!strcmp(role, "tool") && t->kind >= SYNOR__TMPL_LLAMA2);
    switch (t->kind) {
    case SYNOR__TMPL_CHATML:
        synor__buf_printf(b, "<|im_start|>%s\n", role);
        synor__buf_append(b, content, len);
        synor__buf_puts(b, "<|im_end|>\n");
        break;
    case SYNOR__TMPL_LLAMA2: /* *turn: 0 before the first turn, 1 inside one, 2 after an answer */
        content_of(t, &content, &len);
        if (*turn != 1)
            synor__buf_puts(b, *turn == 2 && t->bos_turns ? "<s>[INST] " : "[INST] ");
        *turn = 1;
        if (!strcmp(role, "system")) {
            synor__buf_puts(b, t->sys ? "<<SYS>>\n" : "");
            synor__buf_append(b, content, len);
            synor__buf_puts(b, t->sys ? "\n<</SYS>>\n\n" : "\n");
        } else if (user) {
            synor__buf_append(b, content, len);
            synor__buf_puts(b, " [/INST]");
        } else {
            synor__buf_puts(b, t->space ? " " : "");
            synor__buf_append(b, content, len);
            synor__buf_printf(b, "%s%s", t->space ? " " : "", t->eos);
            *turn = 2;
        }
        break;
    case SYNOR__TMPL_ZEPHYR:
        synor__buf_printf(b, "<|%s|>\n", user ? "user" : role);
        synor__buf_append(b, content, len);
        synor__buf_printf(b, "%s\n", t->eos);
        break;
    default:
        synor__buf_printf(b, "%s: ", role);
        synor__buf_append(b, content, len);
        synor__buf_puts(b, "\n");
    }
}

void synor__serve_tmpl_generation(const synor__serve_tmpl *t, synor__buf *b, int *turn)
{
    (void)turn;
    switch (t->kind) {
    case SYNOR__TMPL_CHATML:
        synor__buf_puts(b, "<|im_start|>assistant\n");
        break;
    case SYNOR__TMPL_LLAMA2: /* (the answer follows the user's " [/INST]") */
        break;
    case SYNOR__TMPL_ZEPHYR:
        synor__buf_puts(b, "<|assistant|>\n");
        break;
    default:
        synor__buf_puts(b, "assistant: ");
    }
}
