#!/usr/bin/env bash
# synor serve: health, models, completions (whole and streamed) equal to
# synor generate's greedy text, chat, every error answer, 16 concurrent
# requests giving their sequential answers, overload refused with 503 and
# nothing lost, metrics moving, SIGTERM finishing in-flight requests and
# exiting 0. Skipped (77) in a build without libmicrohttpd.
# usage: serve.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
command -v curl >/dev/null || { echo "serve: curl not installed; skipped"; exit 77; }

# start NAME ARGS...: a server in the background; its pid in $pid, its
# port in $port (read from its first line); 1 if it did not come up.
start() {
  local name=$1; shift
  "$S" serve -m "${model:-$tmp/m.gguf}" --port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!; pids+=("$pid"); port=
  for _ in $(seq 600); do
    port=$(sed -n 's|^synor serve: listening on http://127.0.0.1:\([0-9]*\) (model .*)$|\1|p' "$tmp/$name.out")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# req METHOD PATH [BODY]: status code on stdout, body in $tmp/body, headers in $tmp/hdr
req() {
  local m=$1 path=$2
  if [ $# -ge 3 ]; then
    curl -s --max-time 120 -X "$m" -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' \
      -H 'Content-Type: application/json' --data-binary "$3" "http://127.0.0.1:$port$path"
  else
    curl -s --max-time 120 -X "$m" -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' \
      "http://127.0.0.1:$port$path"
  fi
}
get() { "$JC" -g "$1" <"$tmp/body"; }
msg_has() { get error.message | grep -qF -- "$1"; }
# greedy text of synor generate for prompt $1, $2 tokens: what follows the
# prompt, without the newline generate ends with
expect() {
  local p=$1 n=$2; shift 2
  "$S" generate -m "$tmp/m.gguf" -p "$p" -n "$n" --quiet "$@" >"$tmp/gen" || return 1
  tail -c +$((${#p} + 1)) "$tmp/gen" | head -c -1
}

"$S" model synth "$tmp/m.gguf" --preset tiny --text "$SRC/README.md" >/dev/null || exit 1
# (no cache here: the batching checks below must reach the engine)
if ! start main --model-name tiny --max-seqs 16 --max-queue 64 --no-cache; then
  if grep -q "without libmicrohttpd" "$tmp/main.err"; then
    echo "serve: built without libmicrohttpd; skipped"
    exit 77
  fi
  echo "FAIL start: $(cat "$tmp/main.err")"
  exit 1
fi
main_pid=$pid

check health        [ "$(req GET /health)" = 200 ]
check health-body   [ "$(get status)" = ok ]
check models        [ "$(req GET /v1/models)" = 200 ]
check models-id     [ "$(get data.0.id)" = tiny ]
check models-list   [ "$(get object)" = list ]

# a greedy completion is synor generate's text
p="Synor places"
check complete      [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":16,"temperature":0}')" = 200 ]
get choices.0.text >"$tmp/got"; expect "$p" 16 >"$tmp/want"
check complete-text cmp -s "$tmp/got" "$tmp/want"
check complete-len  [ "$(wc -c <"$tmp/got")" -gt 0 ]
check complete-obj  [ "$(get object)" = text_completion ]
check complete-fin  [ "$(get choices.0.finish_reason)" = length ]
check complete-used [ "$(get usage.completion_tokens)" = 16 ]
check complete-sum  [ "$(get usage.total_tokens)" = $(($(get usage.prompt_tokens) + 16)) ]
check complete-id   grep -qE '^cmpl-[0-9]+$' <(get id)

# streamed: one event per token, a last one with the finish reason, [DONE]
check stream        [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":16,"temperature":0,"stream":true}')" = 200 ]
check stream-type   grep -qi '^content-type: text/event-stream' "$tmp/hdr"
grep '^data: ' "$tmp/body" >"$tmp/events"
check stream-events [ "$(wc -l <"$tmp/events")" = 18 ]
check stream-done   [ "$(tail -n 1 "$tmp/events")" = "data: [DONE]" ]
: >"$tmp/streamed"
while IFS= read -r l; do
  [ "$l" = "data: [DONE]" ] && continue
  printf '%s' "${l#data: }" | "$JC" -g choices.0.text >>"$tmp/streamed"
done <"$tmp/events"
check stream-text   cmp -s "$tmp/streamed" "$tmp/want"
sed -n '17p' "$tmp/events" | sed 's/^data: //' >"$tmp/body"
check stream-fin    [ "$(get choices.0.finish_reason)" = length ]
check stream-usage  [ "$(get usage.completion_tokens)" = 16 ]

# chat: the messages in the template "ROLE: CONTENT\n"..., then "assistant: "
check chat          [ "$(req POST /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Synor?"}],"max_tokens":12,"temperature":0}')" = 200 ]
check chat-obj      [ "$(get object)" = chat.completion ]
check chat-role     [ "$(get choices.0.message.role)" = assistant ]
get choices.0.message.content >"$tmp/got"
expect $'system: Be brief.\nuser: What is Synor?\nassistant: ' 12 >"$tmp/want"
check chat-text     cmp -s "$tmp/got" "$tmp/want"
check chat-stream   [ "$(req POST /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Synor?"}],"max_tokens":12,"temperature":0,"stream":true}')" = 200 ]
: >"$tmp/streamed"
while IFS= read -r l; do
  case $l in "data: [DONE]"|"") continue ;; esac
  printf '%s' "${l#data: }" >"$tmp/ev"
  [ "$("$JC" -g object <"$tmp/ev")" = chat.completion.chunk ] || echo "bad chunk: $l"
  "$JC" -g choices.0.delta.content <"$tmp/ev" >>"$tmp/streamed" 2>/dev/null
done < <(grep '^data: ' "$tmp/body")
check chat-stream-text cmp -s "$tmp/streamed" "$tmp/want"

# prefix caching: a second conversation with the same long system prompt reuses the KV blocks
# the first computed, and its answer is still generate's
sys=$(head -c 300 "$SRC/README.md" | LC_ALL=C tr -cd 'A-Za-z .,')
req GET /metrics >/dev/null; val() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/body"; }
r0=$(val synor_prefix_reused_tokens_total)
check pc-first      [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"system\",\"content\":\"$sys\"},{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":8,\"temperature\":0}")" = 200 ]
check pc-second     [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"system\",\"content\":\"$sys\"},{\"role\":\"user\",\"content\":\"What is it?\"}],\"max_tokens\":8,\"temperature\":0}")" = 200 ]
get choices.0.message.content >"$tmp/got"
expect "system: $sys"$'\nuser: What is it?\nassistant: ' 8 >"$tmp/want"
check pc-text       cmp -s "$tmp/got" "$tmp/want"
req GET /metrics >/dev/null
check pc-reused     [ "$(val synor_prefix_reused_tokens_total)" -ge $((r0 + 48)) ]
check pc-cached     [ "$(val synor_kv_blocks_cached)" -gt 0 ]
check pc-used       [ "$(val synor_kv_blocks_used)" = 0 ]

# token ids in and out (OpenAI's token-array prompt, vLLM's return_token_ids): a prompt given as
# the ids a text prompt became gives that prompt's answer; the ids come back, as many as the
# usage counts; ids outside the vocabulary, lists of prompts and streams with ids are refused
ids_of() { sed -n "s/.*\"$1\":\[\([0-9,]*\)\].*/\1/p" "$tmp/body"; }
check tok-text      [ "$(req POST /v1/completions '{"prompt":"Synor Compute is","max_tokens":12,"temperature":0,"return_token_ids":true}')" = 200 ]
get choices.0.text >"$tmp/want"
pids_=$(ids_of prompt_token_ids); gids_=$(ids_of token_ids)
check tok-ids-n     [ "$(echo "$gids_" | tr ',' '\n' | wc -l)" = "$(get usage.completion_tokens)" ]
check tok-prompt-n  [ "$(echo "$pids_" | tr ',' '\n' | wc -l)" = "$(get usage.prompt_tokens)" ]
check tok-array     [ "$(req POST /v1/completions "{\"prompt\":[$pids_],\"max_tokens\":12,\"temperature\":0}")" = 200 ]
get choices.0.text >"$tmp/got"
check tok-same      cmp -s "$tmp/got" "$tmp/want"
check tok-vocab     [ "$(req POST /v1/completions '{"prompt":[1,2,99999],"max_tokens":2}')" = 400 ]
check tok-vocab-msg msg_has 'prompt[2]: token 99999 is outside'
check tok-list      [ "$(req POST /v1/completions '{"prompt":["a","b"],"max_tokens":2}')" = 400 ]
check tok-one-list  [ "$(req POST /v1/completions '{"prompt":["Synor Compute is"],"max_tokens":12,"temperature":0}')" = 200 ]
get choices.0.text >"$tmp/got"
check tok-one-same  cmp -s "$tmp/got" "$tmp/want"
# streamed: the prompt's ids in the first chunk, each chunk the ids of its tokens, all of them
# the whole answer's
check tok-stream    [ "$(req POST /v1/completions '{"prompt":"Synor Compute is","max_tokens":12,"temperature":0,"return_token_ids":true,"stream":true}')" = 200 ]
check tok-stream-p  [ "$(grep -c "\"prompt_token_ids\":\[$pids_\]" "$tmp/body")" = 1 ]
check tok-stream-ids [ "$(grep -o '"token_ids":\[[0-9,]*\]' "$tmp/body" | grep -v '"prompt_token_ids"' | sed 's/.*\[\(.*\)\]/\1/' | grep -v '^$' | paste -sd, -)" = "$gids_" ]
check tok-chat      [ "$(req POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"return_token_ids":true}')" = 200 ]
check tok-chat-ids  [ -n "$(ids_of prompt_token_ids)" ] && [ -n "$(ids_of token_ids)" ]
# usage.prompt_tokens_details.cached_tokens: the prompt positions the prefix cache gave
check tok-cached0   [ "$(req POST /v1/completions "{\"prompt\":\"$sys\",\"max_tokens\":2}")" = 200 ]
check tok-cached    [ "$(req POST /v1/completions "{\"prompt\":\"$sys\",\"max_tokens\":2}")" = 200 ] &&
                    [ "$(get usage.prompt_tokens_details.cached_tokens)" -ge 48 ]

# stop sequences: the answer ends before the first place one appears, whole and streamed. A
# seeded answer at temperature 4 (the generated weights' greedy text is one piece repeated); the
# stop: its first 4 letters whose two halves differ, so several tokens, the first of which a
# stream must hold back until the next shows the stop
# (the first seed from 3 whose text has such a word, and well-formed UTF-8 before it - the
# server's JSON writes ill-formed bytes as U+FFFD: the model is trained on README.md)
for seed in $(seq 3 60); do
  expect "Synor places" 24 --temp 4 --top-p 1 --seed "$seed" >"$tmp/full"
  stop=$(awk '{ for (i = 1; i + 3 <= length($0); i++) { w = substr($0, i, 4)
    if (w ~ /^[a-z]+$/ && substr(w, 1, 2) != substr(w, 3, 2)) { print w; exit } } }' "$tmp/full")
  full=$(cat "$tmp/full")
  [ -n "$stop" ] && printf '%s' "${full%%"$stop"*}" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 && break
done
sp="\"temperature\":4,\"top_p\":1,\"seed\":$seed"
full=$(cat "$tmp/full")
printf '%s' "${full%%"$stop"*}" >"$tmp/want"
check stop-word     [ -n "$stop" ]
check stop-cut      [ "$(wc -c <"$tmp/want")" -lt "$(wc -c <"$tmp/full")" ]
check stop          [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp,\"stop\":\"$stop\"}")" = 200 ]
get choices.0.text >"$tmp/got"
check stop-text     cmp -s "$tmp/got" "$tmp/want"
check stop-fin      [ "$(get choices.0.finish_reason)" = stop ]
check stop-array    [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp,\"stop\":[\"qqzzy\",\"$stop\"]}")" = 200 ]
get choices.0.text >"$tmp/got"
check stop-array-text cmp -s "$tmp/got" "$tmp/want"
check stop-stream   [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp,\"stream\":true,\"stop\":[\"$stop\"]}")" = 200 ]
: >"$tmp/streamed"
fin=
while IFS= read -r l; do
  case $l in "data: [DONE]"|"") continue ;; esac
  printf '%s' "${l#data: }" >"$tmp/ev"
  "$JC" -g choices.0.text <"$tmp/ev" >>"$tmp/streamed" 2>/dev/null
  f=$("$JC" -g choices.0.finish_reason <"$tmp/ev" 2>/dev/null) && [ -n "$f" ] && fin=$f
done < <(grep '^data: ' "$tmp/body")
check stop-stream-text cmp -s "$tmp/streamed" "$tmp/want"
check stop-stream-fin [ "$fin" = stop ]
check stop-never    [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp,\"stop\":[\"qqzzy\"]}")" = 200 ]
get choices.0.text >"$tmp/got"
req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp}" >/dev/null
get choices.0.text >"$tmp/nostop" # (the server's JSON replaces the ill-formed bytes generate prints)
check stop-never-text cmp -s "$tmp/got" "$tmp/nostop"
check stop-never-fin [ "$(get choices.0.finish_reason)" = length ]

# presence and frequency penalties: the generated weights' greedy text repeats one piece, and
# penalties move it on (kept for the speculative server's check below)
pbody='{"prompt":"Synor places","max_tokens":24,"temperature":0,"presence_penalty":2,"frequency_penalty":1.5}'
check pen           [ "$(req POST /v1/completions "$pbody")" = 200 ]
get choices.0.text >"$tmp/pen-main"
expect "Synor places" 24 >"$tmp/want"
differ() { ! cmp -s "$1" "$2"; }
check pen-differs   differ "$tmp/pen-main" "$tmp/want"
# logprobs: each token's log-probability and its most likely alternatives (the model's
# distribution); the tokens make the text, and a greedy token is its row's most likely
check lp            [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":8,"temperature":0,"logprobs":3}')" = 200 ]
ntok=$(get usage.completion_tokens)
lp_ok=1
: >"$tmp/lptext"
for i in $(seq 0 $((ntok - 1))); do
  get "choices.0.logprobs.tokens.$i" >>"$tmp/lptext" || lp_ok=0
  l=$(get "choices.0.logprobs.token_logprobs.$i") || lp_ok=0
  awk -v l="$l" 'BEGIN { exit !(l <= 0) }' || lp_ok=0
done
get choices.0.text >"$tmp/got"
check lp-tokens     [ "$lp_ok" = 1 ]
check lp-text       cmp -s "$tmp/lptext" "$tmp/got"
check lp-offset     [ "$(get choices.0.logprobs.text_offset.1)" = "$(get choices.0.logprobs.tokens.0 | wc -c)" ]
check lp-chat       [ "$(req POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"temperature":0,"logprobs":true,"top_logprobs":2}')" = 200 ]
check lp-chat-top   [ "$(get choices.0.logprobs.content.2.top_logprobs.1.token | wc -c)" -gt 0 ]
check lp-chat-first [ "$(get choices.0.logprobs.content.0.top_logprobs.0.logprob)" = "$(get choices.0.logprobs.content.0.logprob)" ]
# every figure of an answer's logprobs (kept for the speculative server's check below)
lpbody='{"messages":[{"role":"user","content":"Synor places"}],"max_tokens":8,"temperature":0,"logprobs":true,"top_logprobs":3}'
lp_values() { for i in $(seq 0 $(($(get usage.completion_tokens) - 1))); do
  get "choices.0.logprobs.content.$i.logprob"
  for j in 0 1 2; do get "choices.0.logprobs.content.$i.top_logprobs.$j.logprob"; done; echo; done; }
check lp-all        [ "$(req POST /v1/chat/completions "$lpbody")" = 200 ]
lp_values >"$tmp/lp-main"
# streamed with logprobs: each chunk carries the entries of the tokens its text completes; all
# together the whole answer's, figure for figure
sse_cat() { # FIELD...: each event's FIELDs (with an index: every match) in order, one per line
  while IFS= read -r l; do
    case $l in "data: [DONE]"|"") continue ;; esac
    printf '%s' "${l#data: }" >"$tmp/ev"
    for f in "$@"; do "$JC" -g "$f" <"$tmp/ev" 2>/dev/null && echo; done
  done < <(grep '^data: ' "$tmp/body"); }
check lp-stream     [ "$(req POST /v1/chat/completions "${lpbody%\}},\"stream\":true}")" = 200 ]
: >"$tmp/lp-stream"
while IFS= read -r l; do
  case $l in "data: [DONE]"|"") continue ;; esac
  printf '%s' "${l#data: }" >"$tmp/ev"
  for i in $(seq 0 20); do
    "$JC" -g "choices.0.logprobs.content.$i.logprob" <"$tmp/ev" >>"$tmp/lp-stream" 2>/dev/null || break
    for j in 0 1 2; do "$JC" -g "choices.0.logprobs.content.$i.top_logprobs.$j.logprob" <"$tmp/ev" >>"$tmp/lp-stream"; done
    echo >>"$tmp/lp-stream"
  done
done < <(grep '^data: ' "$tmp/body")
check lp-stream-same cmp -s "$tmp/lp-stream" "$tmp/lp-main"
check lp-stream-cmpl [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":8,"temperature":0,"logprobs":3,"stream":true}')" = 200 ]
: >"$tmp/lptext2"
while IFS= read -r l; do
  case $l in "data: [DONE]"|"") continue ;; esac
  printf '%s' "${l#data: }" >"$tmp/ev"
  for i in $(seq 0 20); do "$JC" -g "choices.0.logprobs.tokens.$i" <"$tmp/ev" >>"$tmp/lptext2" 2>/dev/null || break; done
done < <(grep '^data: ' "$tmp/body")
check lp-stream-tokens cmp -s "$tmp/lptext2" "$tmp/lptext"
# logit_bias: +100 makes one token every greedy pick; a token outside the vocabulary is refused
check lb            [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":4,"temperature":0,"logit_bias":{"300":100},"logprobs":1}')" = 200 ]
check lb-same       [ "$(get choices.0.logprobs.tokens.1)" = "$(get choices.0.logprobs.tokens.3)" ]
check lb-differs    differ <(get choices.0.text) <(expect "Synor places" 4)
check lb-vocab      [ "$(req POST /v1/completions '{"prompt":"x","logit_bias":{"99999":1}}')" = 400 ]
check lb-vocab-msg  msg_has "logit_bias: token 99999 is outside the vocabulary of 512"
# response_format json_object: the answer is JSON. With '{' and '}' pushed up (their byte pieces: 3 +
# 0x7B, 0x7D) the object opens and closes at once, then only the end may follow (finish "stop")
js='"response_format":{"type":"json_object"}'
check js            [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":8,\"temperature\":0,$js,\"logit_bias\":{\"126\":100,\"128\":100}}")" = 200 ]
check js-closed     [ "$(get choices.0.text | tr -d ' \n\t\r')" = "{}" ]
check js-fin        [ "$(get choices.0.finish_reason)" = stop ]
check js-open       [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":12,\"temperature\":0,$js}")" = 200 ]
check js-brace      [ "$(get choices.0.text | tr -d ' \n\t\r' | head -c 1)" = "{" ]
check js-differs    differ <(get choices.0.text) <(expect "Synor places" 12)
check js-chat       [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4,$js}")" = 200 ]
check js-chat-brace [ "$(get choices.0.message.content | tr -d ' \n\t\r' | head -c 1)" = "{" ]
check js-text-type  [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":12,"temperature":0,"response_format":{"type":"text"}}')" = 200 ]
check js-text-same  cmp -s <(get choices.0.text) <(expect "Synor places" 12)
# json_schema: the answer is an object the schema allows, its properties in the schema's order
# (greedy: blanks are bounded, so the object closes within the tokens asked for); a different
# schema is a different exact-cache key; a keyword the constraint cannot honour is a 400
sch='{"type":"object","properties":{"kind":{"enum":["red","blue"]},"ok":{"type":"boolean"}},"required":["kind","ok"],"additionalProperties":false}'
check jsc           [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":100,\"temperature\":0,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"t\",\"strict\":true,\"schema\":$sch}}}")" = 200 ]
check jsc-fin       [ "$(get choices.0.finish_reason)" = stop ]
get choices.0.text >"$tmp/jsc"
check jsc-kind      grep -qxE 'red|blue' <("$JC" -g kind <"$tmp/jsc")
check jsc-ok        grep -qxE 'true|false' <("$JC" -g ok <"$tmp/jsc")
check jsc-order     [ "$(tr -d ' \n\t\r' <"$tmp/jsc" | head -c 8)" = '{"kind":' ]
sch2=${sch/'["red","blue"]'/'["green"]'}
check jsc-other     [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":100,\"temperature\":0,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"t\",\"schema\":$sch2}}}")" = 200 ]
check jsc-other-kind [ "$(get choices.0.text | "$JC" -g kind)" = green ]
check jsc-chat      [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":100,\"temperature\":0,\"response_format\":{\"type\":\"json_object\",\"schema\":$sch}}")" = 200 ]
check jsc-chat-kind grep -qxE 'red|blue' <(get choices.0.message.content | "$JC" -g kind)
check jsc-bad       [ "$(req POST /v1/completions '{"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}}}')" = 400 ]
check jsc-bad-msg   msg_has 'response_format.json_schema.schema/properties/a: keyword "pattern" is not supported'
check jsc-type      [ "$(req POST /v1/completions '{"prompt":"x","response_format":{"type":"xml"}}')" = 400 ]
check jsc-type-msg  msg_has 'response_format.type: "xml" is not supported'
# vLLM's guided_choice: the answer is one of the texts and ends there (finish "stop");
# guided_json as a schema; guided_regex refused
check gc            [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":40,"temperature":0,"guided_choice":["cheap","fast","both ways"]}')" = 200 ]
check gc-text       grep -qxE 'cheap|fast|both ways' <(get choices.0.text)
check gc-fin        [ "$(get choices.0.finish_reason)" = stop ]
check gj            [ "$(req POST /v1/completions "{\"prompt\":\"Synor places\",\"max_tokens\":100,\"temperature\":0,\"guided_json\":$sch}")" = 200 ]
check gj-kind       grep -qxE 'red|blue' <(get choices.0.text | "$JC" -g kind)
check gr            [ "$(req POST /v1/completions '{"prompt":"x","guided_regex":"[a-z]+"}')" = 400 ]
check gr-msg        msg_has 'guided_regex: not supported by synor serve'
# tools: a call asked for is constrained to {"name", "arguments"} (the name picks the arguments'
# schema) and answered as tool_calls (arguments a JSON string); streamed, one delta carries the
# whole call; "auto" (the default): below
TOOLS='"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]}},"required":["city","unit"]}}},{"type":"function","function":{"name":"get_time"}}]'
WX='"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":120,"temperature":0'
check tc            [ "$(req POST /v1/chat/completions "{$WX,$TOOLS,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}")" = 200 ]
check tc-fin        [ "$(get choices.0.finish_reason)" = tool_calls ]
check tc-name       [ "$(get choices.0.message.tool_calls.0.function.name)" = get_weather ]
check tc-content    [ "$(get choices.0.message.content)" = null ]
check tc-id         grep -q '^call_chatcmpl-' <(get choices.0.message.tool_calls.0.id)
get choices.0.message.tool_calls.0.function.arguments >"$tmp/args"
check tc-unit       grep -qxE 'c|f' <("$JC" -g unit <"$tmp/args")
check tc-city       "$JC" -g city <"$tmp/args"
# streamed as OpenAI streams a call: a delta with its id and name, then its arguments piece by
# piece, which put together are the whole answer's
NAMED='"tool_choice":{"type":"function","function":{"name":"get_weather"}}'
check tc-whole      [ "$(req POST /v1/chat/completions "{$WX,$TOOLS,$NAMED}")" = 200 ]
get choices.0.message.tool_calls.0.function.arguments >"$tmp/args-whole"
check tc-stream     [ "$(req POST /v1/chat/completions "{$WX,$TOOLS,$NAMED,\"stream\":true}")" = 200 ]
check tc-stream-call grep -q '"delta":{"role":"assistant","content":null,"tool_calls":\[{"index":0,"id":"call_chatcmpl-[0-9]*_0","type":"function","function":{"name":"get_weather","arguments":""}}\]}' "$tmp/body"
check tc-stream-fin grep -q '"finish_reason":"tool_calls"' "$tmp/body"
check tc-stream-one [ "$(grep -c '"id":"call_' "$tmp/body")" = 1 ]
: >"$tmp/args-stream"
while IFS= read -r l; do
  case $l in "data: [DONE]"|"") continue ;; esac
  printf '%s' "${l#data: }" | "$JC" -g choices.0.delta.tool_calls.0.function.arguments >>"$tmp/args-stream" 2>/dev/null
done < <(grep '^data: ' "$tmp/body")
check tc-stream-pieces [ "$(grep -c '"function":{"arguments":' "$tmp/body")" -gt 2 ]
check tc-stream-args cmp -s "$tmp/args-stream" "$tmp/args-whole"
check tc-none       [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4,\"temperature\":0,$TOOLS,\"tool_choice\":\"none\"}")" = 200 ]
check tc-none-text  [ "$(get choices.0.finish_reason)" = length ]
# "auto" (the default): the model picks a call or a text ({"tool_call": ...} or {"response": ...},
# llama.cpp's generic format): answered as tool_calls, or as content with "stop"
check tc-auto       [ "$(req POST /v1/chat/completions "{$WX,$TOOLS}")" = 200 ]
case $(get choices.0.finish_reason) in
  tool_calls) check tc-auto-call grep -qxE 'get_weather|get_time' <(get choices.0.message.tool_calls.0.function.name) ;;
  stop)       check tc-auto-text [ "$(get choices.0.message.content)" != null ] ;;
  *)          check tc-auto-fin false ;;
esac
# with 't' (its byte piece: 3 + 0x74) pushed up the greedy pick is the call ("tool_call" begins so)
check tc-auto-t     [ "$(req POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"max_tokens\":120,\"temperature\":0,$TOOLS,\"logit_bias\":{\"119\":30}}")" = 200 ]
check tc-auto-t-fin [ "$(get choices.0.finish_reason)" = tool_calls ]
check tc-auto-t-name grep -qxE 'get_weather|get_time' <(get choices.0.message.tool_calls.0.function.name)
for s in 1 2 3 4 5 6; do   # sampled: every closed answer is one of the two
  req POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"max_tokens\":120,$TOOLS,\"temperature\":1,\"seed\":$s}" >/dev/null
  f=$(get choices.0.finish_reason)
  [ "$f" = tool_calls ] || [ "$f" = stop ] || [ "$f" = length ] || { check tc-auto-sampled false; break; }
  [ "$f" != tool_calls ] || grep -qxE 'get_weather|get_time' <(get choices.0.message.tool_calls.0.function.name) || { check tc-auto-sampled-name false; break; }
done
# parallel_tool_calls: {"tool_calls": [calls]} (llama.cpp's generic format), each call its id
# (..._K); with 't' pushed up the greedy pick closes the list after one
PAR="\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"max_tokens\":120,\"temperature\":0,$TOOLS,\"tool_choice\":\"required\",\"parallel_tool_calls\":true,\"logit_bias\":{\"119\":30}"
check tc-par        [ "$(req POST /v1/chat/completions "{$PAR}")" = 200 ]
check tc-par-fin    [ "$(get choices.0.finish_reason)" = tool_calls ]
check tc-par-name   grep -qxE 'get_weather|get_time' <(get choices.0.message.tool_calls.0.function.name)
check tc-par-id     grep -qx 'call_chatcmpl-[0-9]*_0_0' <(get choices.0.message.tool_calls.0.id)
check tc-par-stream [ "$(req POST /v1/chat/completions "{$PAR,\"stream\":true}")" = 200 ]
check tc-par-delta  grep -q '"tool_calls":\[{"index":0,"id":"call_chatcmpl-[0-9]*_0_0"' "$tmp/body"
# "auto" streamed, sampled (with 'r' pushed up, some answers are texts): the content deltas, or
# the calls' argument deltas, put together are what the same request answers whole
for s in 1 2 3 4; do
  AUTO="\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":60,\"temperature\":1,\"seed\":$s,$TOOLS,\"logit_bias\":{\"117\":30}"
  req POST /v1/chat/completions "{$AUTO}" >/dev/null
  if [ "$(get choices.0.finish_reason)" = tool_calls ]; then
    get choices.0.message.tool_calls.0.function.arguments >"$tmp/w"; what=tool_calls.0.function.arguments
  else
    get choices.0.message.content >"$tmp/w"; what=content
  fi
  req POST /v1/chat/completions "{$AUTO,\"stream\":true}" >/dev/null
  : >"$tmp/st"
  while IFS= read -r l; do
    case $l in "data: [DONE]"|"") continue ;; esac
    printf '%s' "${l#data: }" | "$JC" -g "choices.0.delta.$what" >>"$tmp/st" 2>/dev/null
  done < <(grep '^data: ' "$tmp/body")
  cmp -s "$tmp/st" "$tmp/w" || { check tc-auto-stream-$s false; }
done
check tc-compl      [ "$(req POST /v1/completions "{\"prompt\":\"x\",$TOOLS}")" = 400 ]
check pen-bad       [ "$(req POST /v1/completions '{"prompt":"x","presence_penalty":3}')" = 400 ]
check pen-bad-msg   msg_has "presence_penalty: value 3 is above the maximum 2"

# echo: the prompt, then the answer (generate prints both); with logprobs the prompt's tokens
# first (every one but BOS), their text the prompt; a stop sequence in the prompt does not cut it
expect "Synor places" 8 >/dev/null; head -c -1 "$tmp/gen" >"$tmp/want"
check echo          [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":8,"temperature":0,"echo":true}')" = 200 ]
get choices.0.text >"$tmp/got"
check echo-text     cmp -s "$tmp/got" "$tmp/want"
check echo-lp       [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":8,"temperature":0,"echo":true,"logprobs":2,"stop":"places"}')" = 200 ]
get choices.0.text >"$tmp/got"
check echo-lp-text  cmp -s "$tmp/got" "$tmp/want"
np=$(get usage.prompt_tokens); nt=$(get usage.completion_tokens)
: >"$tmp/lptext"; lp_ok=1
for i in $(seq 0 $((np - 1 + nt - 1))); do
  get "choices.0.logprobs.tokens.$i" >>"$tmp/lptext" || lp_ok=0
  l=$(get "choices.0.logprobs.token_logprobs.$i") || lp_ok=0
  awk -v l="$l" 'BEGIN { exit !(l <= 0) }' || lp_ok=0
done
check echo-lp-all   [ "$lp_ok" = 1 ]
check echo-lp-count cmp -s <(get "choices.0.logprobs.tokens.$((np - 1 + nt))" 2>/dev/null) /dev/null
check echo-lp-tokens cmp -s "$tmp/lptext" "$tmp/want"
check echo-lp-prompt [ "$(get "choices.0.logprobs.text_offset.$((np - 1))")" = "$(printf 'Synor places' | wc -c)" ]
# streamed, the prompt comes with the first token's text
check echo-stream   [ "$(req POST /v1/completions '{"prompt":"Synor places","max_tokens":8,"temperature":0,"echo":true,"stream":true}')" = 200 ]
sse_cat choices.0.text | tr -d '\n' >"$tmp/got"
check echo-stream-text cmp -s "$tmp/got" <(tr -d '\n' <"$tmp/want")

# n choices, each its own draw: choice 0 is the request's with its seed, the others differ;
# streamed, each choice's chunks carry its index and its own finish
nb="{\"prompt\":\"Synor places\",\"max_tokens\":24,$sp"
check n3            [ "$(req POST /v1/completions "$nb,\"n\":3}")" = 200 ]
for i in 0 1 2; do get choices.$i.text >"$tmp/n$i"; done
check n3-first      cmp -s "$tmp/n0" "$tmp/nostop"
check n3-differ     differ "$tmp/n1" "$tmp/n0"
check n3-differ2    differ "$tmp/n2" "$tmp/n1"
check n3-index      [ "$(get choices.2.index)" = 2 ]
check n3-none       cmp -s <(get choices.3.text 2>/dev/null) /dev/null
check n3-usage      [ "$(get usage.completion_tokens)" -gt 24 ]
req GET /metrics >/dev/null; r0=$(val synor_prefix_reused_tokens_total)
check n3-long       [ "$(req POST /v1/completions "{\"prompt\":\"$sys\",\"max_tokens\":4,\"temperature\":0,\"n\":3}")" = 200 ]
check n3-long-same  [ "$(get choices.0.text)" = "$(get choices.2.text)" ]
req GET /metrics >/dev/null
check n3-reused     [ "$(val synor_prefix_reused_tokens_total)" -ge $((r0 + 2 * 48)) ]
# best_of: the choices n would give, the one whose tokens' log-probabilities sum highest answered
# (the first seed from 5 whose best is not choice 0, so that the order is tested)
for seed in $(seq 5 40); do
  bb="{\"prompt\":\"Synor places\",\"max_tokens\":24,\"temperature\":4,\"top_p\":1,\"seed\":$seed"
  req POST /v1/completions "$bb,\"n\":3,\"logprobs\":0}" >/dev/null
  best=-1; bsum=
  for i in 0 1 2; do
    sum=$(for j in $(seq 0 23); do get "choices.$i.logprobs.token_logprobs.$j" 2>/dev/null && echo; done |
          awk '{ s += $1 } END { printf "%.6f", s }')
    if [ "$best" = -1 ] || awk -v a="$sum" -v b="$bsum" 'BEGIN { exit !(a > b) }'; then best=$i; bsum=$sum; fi
  done
  [ "$best" != 0 ] && break
done
get "choices.$best.text" >"$tmp/best"
check bo-not-first  [ "$best" != 0 ]
check bo            [ "$(req POST /v1/completions "$bb,\"best_of\":3}")" = 200 ]
check bo-text       cmp -s <(get choices.0.text) "$tmp/best"
check bo-one        cmp -s <(get choices.1.text 2>/dev/null) /dev/null
check bo-usage      [ "$(get usage.completion_tokens)" -gt 24 ]
check bo-stream     [ "$(req POST /v1/completions "$nb,\"best_of\":2,\"stream\":true}")" = 400 ]
check bo-stream-msg msg_has "best_of: not with"
check bo-less       [ "$(req POST /v1/completions "$nb,\"best_of\":2,\"n\":3}")" = 400 ]
check n3-again      [ "$(req POST /v1/completions "$nb,\"n\":3}")" = 200 ]
check n3-seeded     cmp -s <(get choices.2.text) "$tmp/n2"
check n2-stream     [ "$(req POST /v1/completions "$nb,\"n\":2,\"stream\":true}")" = 200 ]
for i in 0 1; do
  : >"$tmp/ns$i"
  while IFS= read -r l; do
    case $l in "data: [DONE]"|"") continue ;; esac
    printf '%s' "${l#data: }" >"$tmp/ev"
    [ "$("$JC" -g choices.0.index <"$tmp/ev")" = "$i" ] && "$JC" -g choices.0.text <"$tmp/ev" >>"$tmp/ns$i"
  done < <(grep '^data: ' "$tmp/body")
done
check n2-stream-0   cmp -s "$tmp/ns0" "$tmp/n0"
check n2-stream-1   cmp -s "$tmp/ns1" "$tmp/n1"
check n2-stream-fin [ "$(grep -c '"finish_reason":"' "$tmp/body")" = 2 ]
check n2-stream-done [ "$(grep -c '^data: \[DONE\]' "$tmp/body")" = 1 ]

# sampling: a seed gives the same text twice
body='{"prompt":"Synor","max_tokens":16,"temperature":0.9,"top_p":0.95,"top_k":40,"seed":7}'
req POST /v1/completions "$body" >/dev/null; get choices.0.text >"$tmp/s1"
check seed          [ "$(req POST /v1/completions "$body")" = 200 ]
get choices.0.text >"$tmp/s2"
check seed-same     cmp -s "$tmp/s1" "$tmp/s2"

# errors: JSON {"error":{"message","type","code"}} naming what is wrong
check bad-json      [ "$(req POST /v1/completions $'{"prompt": "x",\n  "max_tokens": }')" = 400 ]
check bad-json-pos  msg_has "request body:2:17"
check bad-json-type [ "$(get error.type)" = invalid_request_error ]
check bad-json-code [ "$(get error.code)" = 400 ]
check no-prompt     [ "$(req POST /v1/completions '{"max_tokens":4}')" = 400 ]
check no-prompt-msg msg_has 'missing required field "prompt"'
check bad-max       [ "$(req POST /v1/completions '{"prompt":"x","max_tokens":-3}')" = 400 ]
check bad-max-msg   msg_has "max_tokens: value -3 is outside"
check bad-temp      [ "$(req POST /v1/completions '{"prompt":"x","temperature":"hot"}')" = 400 ]
check bad-temp-msg  msg_has "temperature: expected number, found string"
check bad-topp      [ "$(req POST /v1/completions '{"prompt":"x","top_p":1.5}')" = 400 ]
check bad-topp-msg  msg_has "top_p: value 1.5 is above the maximum 1"
check bad-stream    [ "$(req POST /v1/completions '{"prompt":"x","stream":"yes"}')" = 400 ]
check bad-stream-msg msg_has "stream: expected boolean"
check bad-prompt    [ "$(req POST /v1/completions '{"prompt":{"a":1}}')" = 400 ]
check bad-prompt-msg msg_has "prompt: expected a string or a non-empty array of token ids, found object"
check not-object    [ "$(req POST /v1/completions '[1]')" = 400 ]
check stop-many     [ "$(req POST /v1/completions '{"prompt":"x","stop":["a","b","c","d","e"]}')" = 400 ]
check stop-many-msg msg_has "stop: at most 4 stop sequences, found 5"
check stop-empty    [ "$(req POST /v1/completions '{"prompt":"x","stop":""}')" = 400 ]
check stop-empty-msg msg_has "stop: a stop sequence is 1 to 256 bytes"
check echo-chat     [ "$(req POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"echo":true}')" = 400 ]
check echo-msg      msg_has "echo: not supported"
check n-many        [ "$(req POST /v1/completions '{"prompt":"x","n":17}')" = 400 ]
check n-many-msg    msg_has "n: value 17 is outside"
check no-messages   [ "$(req POST /v1/chat/completions '{"max_tokens":4}')" = 400 ]
check no-messages-msg msg_has 'missing required field "messages"'
check bad-role      [ "$(req POST /v1/chat/completions '{"messages":[{"role":"wizard","content":"x"}]}')" = 400 ]
check bad-role-msg  msg_has 'role "wizard"'
check bad-content   [ "$(req POST /v1/chat/completions '{"messages":[{"role":"user","content":5}]}')" = 400 ]
check bad-content-msg msg_has "messages[0].content"
check unknown-model [ "$(req POST /v1/completions '{"model":"gpt-4","prompt":"x"}')" = 404 ]
check unknown-model-msg msg_has 'model "gpt-4" is not served here'
check unknown-path  [ "$(req GET /v2/nothing)" = 404 ]
check unknown-path-msg msg_has "no such path: /v2/nothing"
check wrong-method  [ "$(req GET /v1/completions)" = 405 ]
check wrong-allow   grep -qi '^allow: POST' "$tmp/hdr"
check wrong-method2 [ "$(req POST /health '{}')" = 405 ]
check wrong-type    [ "$(get error.type)" = method_not_allowed ]
head -c 6000 "$SRC/README.md" | LC_ALL=C tr -cd 'A-Za-z0-9 .,;:()-' >"$tmp/long"
check too-long      [ "$(req POST /v1/completions "{\"prompt\":\"$(cat "$tmp/long")\"}")" = 400 ]
check too-long-msg  grep -qE "the prompt is [0-9]+ tokens; the context holds 256" <(get error.message)
head -c 2000000 /dev/zero | tr '\0' ' ' >"$tmp/big"
check too-big       [ "$(req POST /v1/completions "@$tmp/big")" = 413 ]
check too-big-msg   msg_has "at most 1048576"

# 16 at once: each gets the answer it gets alone (continuous batching
# changes no result)
words=(Synor The runtime places a model tasks on every processor fabric plan market spot price GPU CPU)
for i in $(seq 0 15); do
  req POST /v1/completions "{\"prompt\":\"${words[$i]} $i\",\"max_tokens\":24,\"temperature\":0}" >"$tmp/seq$i.code"
  get choices.0.text >"$tmp/seq$i"
done
differ() { ! cmp -s "$1" "$2"; }
check seq-differ    differ "$tmp/seq0" "$tmp/seq1"
expect "${words[3]} 3" 24 >"$tmp/want"
check seq-generate  cmp -s "$tmp/seq3" "$tmp/want"
: >"$tmp/cfg"
for i in $(seq 0 15); do
  [ "$i" = 0 ] || echo next >>"$tmp/cfg"
  printf 'url = "http://127.0.0.1:%s/v1/completions"\ndata = "{\\"prompt\\":\\"%s %s\\",\\"max_tokens\\":24,\\"temperature\\":0}"\noutput = "%s"\nwrite-out = "%%{http_code}\\n"\n' \
    "$port" "${words[$i]}" "$i" "$tmp/par$i" >>"$tmp/cfg"
done
curl -s --max-time 120 --parallel --parallel-immediate --parallel-max 16 -K "$tmp/cfg" >"$tmp/codes" 2>/dev/null
check par-codes     [ "$(grep -c '^200$' "$tmp/codes")" = 16 ]
same=0
for i in $(seq 0 15); do
  "$JC" -g choices.0.text <"$tmp/par$i" >"$tmp/partext" 2>/dev/null && cmp -s "$tmp/partext" "$tmp/seq$i" && same=$((same + 1))
done
check par-same      [ "$same" = 16 ]

# metrics: Prometheus text, counters that moved
check metrics       [ "$(req GET /metrics)" = 200 ]
check metrics-type  grep -qi '^content-type: text/plain' "$tmp/hdr"
val() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/body"; }
check m-requests    [ "$(val synor_requests_total)" -ge 36 ]
check m-tokens      [ "$(val synor_tokens_generated_total)" -ge $((36 * 12)) ]
check m-prompt      [ "$(val synor_prompt_tokens_total)" -gt 36 ]
check m-running     [ "$(val synor_requests_running)" = 0 ]
check m-waiting     [ "$(val synor_requests_waiting)" = 0 ]
check m-kv          [ "$(val synor_kv_blocks_total)" -gt 0 ]
check m-kv-free     [ "$(val synor_kv_blocks_used)" = 0 ]
check m-400         [ "$(val 'synor_http_responses_total{code="400"}')" -ge 10 ]
check m-tpot        [ "$(val synor_time_per_output_token_seconds_count)" -gt 0 ]
# where the engine's time went: rows (prompt rows among them) over steps,
# the batches inside the steps' time, asleep before the first request
check m-rows        [ "$(val synor_engine_rows_total)" -ge "$(val synor_engine_steps_total)" ]
check m-rows-prompt [ "$(val synor_engine_rows_total)" -ge "$(val synor_engine_prompt_rows_total)" ]
check m-steps       [ "$(val synor_engine_steps_total)" -gt 0 ]
check m-batch-s     awk -v b="$(val 'synor_engine_seconds_total{part="batch"}')" \
                      -v s="$(val 'synor_engine_seconds_total{part="step"}')" 'BEGIN { exit !(b > 0 && b <= s) }'
check m-idle-s      awk -v i="$(val 'synor_engine_seconds_total{part="idle"}')" 'BEGIN { exit !(i > 0) }'
check m-help        grep -q '^# HELP synor_requests_waiting ' "$tmp/body"
check m-type        grep -q '^# TYPE synor_time_per_output_token_seconds histogram' "$tmp/body"

# overload: one generating, one waiting; the rest are refused with 503,
# and every request is answered or refused
check busy-port     [ "$(rc=0; "$S" serve -m "$tmp/m.gguf" --port "$port" >/dev/null 2>"$tmp/busy.err" || rc=$?; echo $rc)" = 1 ]
check busy-msg      grep -q "cannot listen on 127.0.0.1 port $port" "$tmp/busy.err"
main_port=$port
check start-small   start small --max-seqs 1 --max-queue 1 --step-log "$tmp/steps"
: >"$tmp/cfg"
for i in $(seq 0 23); do
  [ "$i" = 0 ] || echo next >>"$tmp/cfg"
  printf 'url = "http://127.0.0.1:%s/v1/completions"\ndata = "{\\"prompt\\":\\"Synor %s\\",\\"max_tokens\\":200}"\noutput = "%s"\ndump-header = "%s"\nwrite-out = "%%{http_code}\\n"\n' \
    "$port" "$i" "$tmp/ov$i" "$tmp/ovh$i" >>"$tmp/cfg"
done
curl -s --max-time 120 --parallel --parallel-immediate --parallel-max 24 -K "$tmp/cfg" >"$tmp/codes" 2>/dev/null
ok=$(grep -c '^200$' "$tmp/codes"); busy=$(grep -c '^503$' "$tmp/codes")
check ov-some-ok    [ "$ok" -ge 1 ]
check ov-some-503   [ "$busy" -ge 1 ]
check ov-none-lost  [ $((ok + busy)) = 24 ]
full=0; refused=0
for i in $(seq 0 23); do
  if grep -q '"completion_tokens":200' "$tmp/ov$i"; then full=$((full + 1))
  elif grep -q '"message":"overloaded' "$tmp/ov$i" && grep -qi '^retry-after: 1' "$tmp/ovh$i"; then refused=$((refused + 1)); fi
done
check ov-answers    [ "$full" = "$ok" ]
check ov-refusals   [ "$refused" = "$busy" ]
check ov-metrics    [ "$(req GET /metrics)" = 200 ]
check ov-m-503      [ "$(val 'synor_http_responses_total{code="503"}')" = "$busy" ]
check ov-m-done     [ "$(val 'synor_requests_finished_total{finish_reason="length"}')" = "$ok" ]

# SIGTERM: a request in flight finishes, then exit 0
small_pid=$pid
curl -s -N --max-time 120 "http://127.0.0.1:$port/v1/completions" \
  -d '{"prompt":"Synor","max_tokens":200,"stream":true}' >"$tmp/last" &
cpid=$!
for _ in $(seq 100); do grep -q '^data: ' "$tmp/last" && break; sleep 0.05; done
kill -TERM "$small_pid"
wait "$small_pid"; check term-exit [ $? = 0 ]
wait "$cpid"
check term-done     [ "$(grep '^data: ' "$tmp/last" | tail -n 1)" = "data: [DONE]" ]
check term-full     grep -q '"completion_tokens":200' "$tmp/last"
check term-msg      grep -q "SIGTERM: stopping" "$tmp/small.err"
# the step log of that server (one sequence): a line of 8 fields a step,
# never two requests running, each step's batch inside the step, and the
# decode rows (rows less prompt rows) are 199 for each request of 200 tokens
check steplog-head  grep -q '^# synor serve step log: t_ms gap_ms step_ms batch_ms rows prompt_rows running waiting$' "$tmp/steps"
check steplog-lines awk '!/^#/ { n++; if (NF != 8 || $7 > 1 || $4 > $3 || $5 < 1 || $6 > $5) bad++ }
                      END { exit !(n > 0 && !bad) }' "$tmp/steps"
check steplog-rows  [ "$(awk '!/^#/ { d += $5 - $6 } END { print d }' "$tmp/steps")" = $(((ok + 1) * 199)) ]
# n choices that the queue cannot all take: refused whole (503), the ones queued cancelled
check n-start       start one --max-seqs 1 --max-queue 1
check n-busy        [ "$(req POST /v1/completions '{"prompt":"Synor","max_tokens":200,"n":3}')" = 503 ]
check n-busy-msg    msg_has "overloaded"
check n-after       [ "$(req POST /v1/completions '{"prompt":"Synor","max_tokens":4}')" = 200 ]
check n-after-len   [ "$(get usage.completion_tokens)" = 4 ]
req GET /metrics >/dev/null
check n-none-left   [ "$(val synor_requests_waiting)/$(val synor_requests_running)/$(val synor_kv_blocks_used)" = 0/0/0 ]
check n-cancelled   [ "$(val 'synor_requests_finished_total{finish_reason="cancelled"}')" -ge 1 ]
kill -TERM "$pid"; wait "$pid"
port=$main_port
kill -INT "$main_pid"
wait "$main_pid"; check int-exit [ $? = 0 ]
port=$main_port
check refused-after [ "$(req GET /health)" = 000 ]

# the exact-match cache: a determined answer (greedy, or seeded) is served
# again from memory, and after a restart from its SQLite file
check c-start       start cached --cache-file "$tmp/cache.db"
body='{"prompt":"Synor caches","max_tokens":12,"temperature":0}'
check c-first       [ "$(req POST /v1/completions "$body")" = 200 ]
get choices.0.text >"$tmp/c1"
check c-again       [ "$(req POST /v1/completions "$body")" = 200 ]
get choices.0.text >"$tmp/c2"
check c-same        cmp -s "$tmp/c1" "$tmp/c2"
check c-usage       [ "$(get usage.completion_tokens)" = 12 ]
sbody='{"prompt":"Synor caches","max_tokens":12,"temperature":0.9,"seed":5}'
check c-seeded      [ "$(req POST /v1/completions "$sbody")" = 200 ]
get choices.0.text >"$tmp/c3"
check c-seeded2     [ "$(req POST /v1/completions "$sbody")" = 200 ]
get choices.0.text >"$tmp/c4"
check c-seeded-same cmp -s "$tmp/c3" "$tmp/c4"
# an answer cut at a stop sequence is kept under a key with it, and served only to that
cstop=$(grep -oE '[a-z]{3,}' "$tmp/c1" | tail -n 1)
xbody="{\"prompt\":\"Synor caches\",\"max_tokens\":12,\"temperature\":0,\"stop\":\"$cstop\"}"
check c-stop        [ "$(req POST /v1/completions "$xbody")" = 200 ]
get choices.0.text >"$tmp/c6"
check c-stop-again  [ "$(req POST /v1/completions "$xbody")" = 200 ]
get choices.0.text >"$tmp/c7"
check c-stop-same   cmp -s "$tmp/c6" "$tmp/c7"
check c-stop-cut    [ "$(wc -c <"$tmp/c6")" -lt "$(wc -c <"$tmp/c1")" ]
check c-nostop      [ "$(req POST /v1/completions "$body")" = 200 ]
get choices.0.text >"$tmp/c8"
check c-nostop-whole cmp -s "$tmp/c1" "$tmp/c8"
check c-unseeded    [ "$(req POST /v1/completions '{"prompt":"Synor caches","max_tokens":12,"temperature":0.9}')" = 200 ]
check c-metrics     [ "$(req GET /metrics)" = 200 ]
check c-hits        [ "$(val 'synor_cache_hits_total{tier="memory"}')" = 4 ]
check c-misses      [ "$(val synor_cache_misses_total)" = 3 ]
check c-requests    [ "$(val synor_requests_total)" = 4 ]
cached_pid=$pid
kill -TERM "$cached_pid"; wait "$cached_pid"
check c-restart     start cached2 --cache-file "$tmp/cache.db"
check c-disk        [ "$(req POST /v1/completions "$body")" = 200 ]
get choices.0.text >"$tmp/c5"
check c-disk-same   cmp -s "$tmp/c1" "$tmp/c5"
req GET /metrics >/dev/null
check c-disk-hit    [ "$(val 'synor_cache_hits_total{tier="disk"}')" = 1 ]
check c-disk-noreq  [ "$(val synor_requests_total)" = 0 ]
kill -TERM "$pid"; wait "$pid"
check c-badmem      [ "$(rc=0; "$S" serve -m "$tmp/m.gguf" --cache-mem lots >/dev/null 2>&1 || rc=$?; echo $rc)" = 2 ]

# the semantic cache: a paraphrase gets the first prompt's answer with its
# similarity (the tiny model puts these two at about 0.98 and the third
# prompt at about 0.56: far from the threshold either way)
check s-start       start sem --no-cache --semantic-threshold 0.95
check s-first       [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on devices","max_tokens":8,"temperature":0}')" = 200 ]
get choices.0.text >"$tmp/s1"
check s-first-fresh [ -z "$(get synor_cache.cache 2>/dev/null)" ]
check s-para        [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on the devices","max_tokens":8,"temperature":0}')" = 200 ]
get choices.0.text >"$tmp/s2"
check s-para-same   cmp -s "$tmp/s1" "$tmp/s2"
check s-para-tier   [ "$(get synor_cache.cache)" = semantic ]
check s-para-sim    awk -v x="$(get synor_cache.similarity)" 'BEGIN { exit !(x >= 0.95 && x <= 1) }'
check s-other       [ "$(req POST /v1/completions '{"prompt":"The coordinator","max_tokens":8,"temperature":0}')" = 200 ]
check s-other-fresh [ -z "$(get synor_cache.cache 2>/dev/null)" ]
check s-stream      [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on devices","max_tokens":8,"stream":true}')" = 200 ]
check s-stream-gen  grep -q '^data: \[DONE\]' "$tmp/body"
req GET /metrics >/dev/null
check s-lookups     [ "$(val synor_semantic_lookups_total)" = 3 ]
check s-hits        [ "$(val synor_semantic_hits_total)" = 1 ]
check s-entries     [ "$(val synor_semantic_entries)" = 2 ]
check s-scan        [ "$(val synor_semantic_hnsw)" = 0 ]
kill -TERM "$pid"; wait "$pid"
check s-exit        [ $? = 0 ]

# kept in a file (--semantic-file): a restarted server answers the
# paraphrase from what the first one stored
check f-start       start semf --no-cache --semantic-threshold 0.95 --semantic-file "$tmp/sem.db"
check f-first       [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on devices","max_tokens":8,"temperature":0}')" = 200 ]
kill -TERM "$pid"; wait "$pid"
check f-restart     start semf2 --no-cache --semantic-threshold 0.95 --semantic-file "$tmp/sem.db"
req GET /metrics >/dev/null
check f-loaded      [ "$(val synor_semantic_entries)" = 1 ]
check f-para        [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on the devices","max_tokens":8,"temperature":0}')" = 200 ]
get choices.0.text >"$tmp/f2"
check f-para-same   cmp -s "$tmp/s1" "$tmp/f2"
check f-para-tier   [ "$(get synor_cache.cache)" = semantic ]
kill -TERM "$pid"; wait "$pid"
check f-exit        [ $? = 0 ]

# the same through hnswlib's graph (--semantic-index hnsw), where the build
# has it: the same answer, and /metrics says the graph answers
if start semh --no-cache --semantic-threshold 0.95 --semantic-index hnsw; then
  check h-first     [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on devices","max_tokens":8,"temperature":0}')" = 200 ]
  check h-para      [ "$(req POST /v1/completions '{"prompt":"Synor places tasks on the devices","max_tokens":8,"temperature":0}')" = 200 ]
  get choices.0.text >"$tmp/h2"
  check h-para-same cmp -s "$tmp/s1" "$tmp/h2"
  check h-para-tier [ "$(get synor_cache.cache)" = semantic ]
  check h-para-sim  awk -v x="$(get synor_cache.similarity)" 'BEGIN { exit !(x >= 0.95 && x <= 1) }'
  req GET /metrics >/dev/null
  check h-graph     [ "$(val synor_semantic_hnsw)" = 1 ]
  kill -TERM "$pid"; wait "$pid"
  check h-exit      [ $? = 0 ]
else
  check h-absent    grep -q "hnswlib" "$tmp/semh.err"
  echo "skipped: --semantic-index hnsw (this build has no hnswlib)"
fi

# request-level speculation: a user asks A then B, twice; the second B is
# a sample generated ahead while the server was idle (served once); with a
# memory tier too small for two answers, a determined B is generated ahead
# into the exact-match cache
wait_metric() { # NAME VALUE: until /metrics shows it (10 s at most)
  for _ in $(seq 100); do
    req GET /metrics >/dev/null; [ "$(val "$1")" = "$2" ] && return 0; sleep 0.1
  done; return 1
}
check p-start       start pred --predict 2 --cache-mem 150B
A='{"prompt":"Alpha asks first","max_tokens":8,"temperature":0.8,"user":"ann"}'
B='{"prompt":"Beta follows","max_tokens":8,"temperature":0.8,"user":"ann"}'
check p-a1          [ "$(req POST /v1/completions "$A")" = 200 ]
check p-b1          [ "$(req POST /v1/completions "$B")" = 200 ]
check p-b1-fresh    [ -z "$(get synor_cache.cache 2>/dev/null)" ]
check p-a2          [ "$(req POST /v1/completions "$A")" = 200 ]
check p-ready       wait_metric synor_predicted_ready_total 1
check p-b2          [ "$(req POST /v1/completions "$B")" = 200 ]
check p-b2-tier     [ "$(get synor_cache.cache)" = predicted ]
check p-b2-len      [ "$(get usage.completion_tokens)" = 8 ]
check p-hits        wait_metric synor_predicted_hits_total 1
C='{"prompt":"Gamma one","max_tokens":8,"temperature":0,"user":"bob"}'
D='{"prompt":"Delta two","max_tokens":8,"temperature":0,"user":"bob"}'
check p-c1          [ "$(req POST /v1/completions "$C")" = 200 ]
check p-d1          [ "$(req POST /v1/completions "$D")" = 200 ]
get choices.0.text >"$tmp/d1"
check p-c2          [ "$(req POST /v1/completions "$C")" = 200 ]
check p-d-ahead     wait_metric synor_predicted_ready_total 3
check p-d2          [ "$(req POST /v1/completions "$D")" = 200 ]
get choices.0.text >"$tmp/d2"
check p-d2-same     cmp -s "$tmp/d1" "$tmp/d2"
check p-d2-tier     [ "$(get synor_cache.cache)" = exact ]
check p-hits2       wait_metric synor_predicted_hits_total 2
check p-baduser     [ "$(req POST /v1/completions '{"prompt":"x","user":""}')" = 400 ]
check p-baduser-msg msg_has "user"
kill -TERM "$pid"; wait "$pid"
check p-exit        [ $? = 0 ]
bad() { local rc=0; "$S" serve -m "$tmp/m.gguf" "$@" >/dev/null 2>"$tmp/err" || rc=$?; [ $rc = 2 ]; }
check s-bad-zero    bad --semantic-threshold 0
check s-bad-big     bad --semantic-threshold 1.5
check s-bad-nan     bad --semantic-threshold nan
check s-bad-msg     grep -q "semantic-threshold" "$tmp/err"
check s-bad-entries bad --semantic-entries 10
check s-bad-index   bad --semantic-threshold 0.9 --semantic-index hnws
check s-bad-idx-msg grep -q "'hnws': expected auto, exact or hnsw" "$tmp/err"
check s-bad-idx-alone bad --semantic-index exact
check s-bad-file-alone bad --semantic-file "$tmp/x.db"
check p-bad-many    bad --predict 17
check p-bad-nocache bad --predict 2 --no-cache
check p-bad-msg     grep -q "no-cache" "$tmp/err"

# usage errors
check no-model      [ "$(rc=0; "$S" serve >/dev/null 2>&1 || rc=$?; echo $rc)" = 2 ]
check bad-port      [ "$(rc=0; "$S" serve -m "$tmp/m.gguf" --port 70000 >/dev/null 2>"$tmp/err" || rc=$?; echo $rc)" = 2 ]
check bad-port-msg  grep -q "70000" "$tmp/err"
# --gpu-layers: on the CUDA test doubles (tests/cuda-mock beside the
# binary) the engine's products run through cuBLAS, answers unchanged
mock=$(dirname "$S")/tests/cuda-mock
if [[ -e $mock/libcuda.so.1 && -e $mock/libcublas.so.13 ]]; then
  if LD_LIBRARY_PATH=$mock start gpu --model-name tiny --no-cache --gpu-layers all; then
    check gpu-complete [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":16,"temperature":0}')" = 200 ]
    get choices.0.text >"$tmp/got"; expect "Synor places" 16 >"$tmp/want"
    check gpu-text     cmp -s "$tmp/got" "$tmp/want"
    kill -TERM "$pid"; wait "$pid"
    check gpu-exit     [ $? = 0 ]
  else
    check gpu-start false
    cat "$tmp/gpu.err"
  fi
fi
# the KV cache's type: a server on the type serve does not default to
# answers generate's greedy text (F32 cache) on the tiny model; a bad type
# is a usage error naming it
other=f16; "$S" serve --help | grep -q "default f16" && other=f32
if start kv --model-name tiny --no-cache --kv-type $other; then
  check kv-complete [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":16,"temperature":0}')" = 200 ]
  get choices.0.text >"$tmp/got"; expect "Synor places" 16 >"$tmp/want"
  check kv-text     cmp -s "$tmp/got" "$tmp/want"
  kill -TERM "$pid"; wait "$pid"
  check kv-exit     [ $? = 0 ]
else
  check kv-start false
fi
check kv-bad        bad --kv-type q8
check kv-bad-msg    grep -q "KV type 'q8'" "$tmp/err"
# --draft: speculative rounds for a request alone; the answers stay generate's (seeded too)
"$S" quantize "$tmp/m.gguf" "$tmp/q4.gguf" --type q4_0 >/dev/null
if start spec --model-name tiny --no-cache --draft "$tmp/q4.gguf" --speculate 3 --speculate-max 4; then
  check spec-complete [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":24,"temperature":0}')" = 200 ]
  get choices.0.text >"$tmp/got"; expect "Synor places" 24 >"$tmp/want"
  check spec-text     cmp -s "$tmp/got" "$tmp/want"
  check spec-stream   [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":24,"temperature":0,"stream":true}')" = 200 ]
  : >"$tmp/got"
  grep '^data: ' "$tmp/body" | while IFS= read -r l; do
    [ "$l" = "data: [DONE]" ] || printf '%s' "${l#data: }" | "$JC" -g choices.0.text >>"$tmp/got"
  done
  check spec-stream-text cmp -s "$tmp/got" "$tmp/want"
  # four at once: rounds for all of them, each answer still generate's
  cps=()
  for i in 1 2 3 4; do
    curl -s --max-time 120 -o "$tmp/sp$i" -H 'Content-Type: application/json' \
      --data-binary "{\"prompt\":\"${words[$i]} $i\",\"max_tokens\":24,\"temperature\":0}" \
      "http://127.0.0.1:$port/v1/completions" &
    cps+=($!)
  done
  wait "${cps[@]}"
  same=0
  for i in 1 2 3 4; do
    expect "${words[$i]} $i" 24 >"$tmp/want"
    "$JC" -g choices.0.text <"$tmp/sp$i" >"$tmp/got" 2>/dev/null && cmp -s "$tmp/got" "$tmp/want" && same=$((same + 1))
  done
  check spec-four     [ "$same" = 4 ]
  # sampled and seeded: the rounds take the seed's own draws, so the text is generate's
  req GET /metrics >/dev/null; r0=$(val synor_spec_rounds_total)
  check spec-seeded   [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":24,"temperature":0.9,"top_p":1,"seed":7}')" = 200 ]
  get choices.0.text >"$tmp/got"; expect "Synor places" 24 --temp 0.9 --top-p 1 --seed 7 >"$tmp/want"
  check spec-seeded-text cmp -s "$tmp/got" "$tmp/want"
  req GET /metrics >/dev/null
  check spec-seeded-rounds [ "$(val synor_spec_rounds_total)" -gt "$r0" ]
  check spec-seeded-k [ "$(req POST /v1/completions '{"model":"tiny","prompt":"Synor places","max_tokens":24,"temperature":1.2,"top_k":30,"top_p":0.9,"seed":3}')" = 200 ]
  get choices.0.text >"$tmp/got"; expect "Synor places" 24 --temp 1.2 --top-k 30 --top-p 0.9 --seed 3 >"$tmp/want"
  check spec-seeded-k-text cmp -s "$tmp/got" "$tmp/want"
  # logprobs in rounds: the check's rows are the plain steps' rows, bit for bit
  check spec-lp       [ "$(req POST /v1/chat/completions "$lpbody")" = 200 ]
  lp_values >"$tmp/got"
  check spec-lp-same  cmp -s "$tmp/got" "$tmp/lp-main"
  # penalties: in rounds the draft's rows and the model's are penalized alike, so the same text
  check spec-pen      [ "$(req POST /v1/completions "$pbody")" = 200 ]
  get choices.0.text >"$tmp/got"
  check spec-pen-text cmp -s "$tmp/got" "$tmp/pen-main"
  check spec-metrics  [ "$(req GET /metrics)" = 200 ]
  check spec-rounds   [ "$(val synor_spec_rounds_total)" -gt 0 ]
  check spec-accepted [ "$(val synor_spec_accepted_total)" -gt 0 ]
  check spec-proposed [ "$(val synor_spec_proposed_total)" -ge "$(val synor_spec_accepted_total)" ]
  kill -TERM "$pid"; wait "$pid"
  check spec-exit     [ $? = 0 ]
else
  check spec-start false
  cat "$tmp/spec.err"
fi
check spec-bad-k    bad --draft "$tmp/q4.gguf" --speculate 0
check spec-k-alone  bad --speculate 4
check spec-k-msg    grep -q -- "--speculate needs --draft" "$tmp/err"
check spec-max-alone bad --speculate-max 2
check spec-max-bad  bad --draft "$tmp/q4.gguf" --speculate-max 0
check spec-nodraft  [ "$(rc=0; "$S" serve -m "$tmp/m.gguf" --draft "$tmp/none.gguf" --port 0 >/dev/null 2>"$tmp/err" || rc=$?; echo $rc)" = 1 ]
check spec-nodraft-msg grep -q "none.gguf" "$tmp/err"
check gpu-bad-arg   [ "$(rc=0; "$S" serve -m "$tmp/m.gguf" --gpu-layers many >/dev/null 2>&1 || rc=$?; echo $rc)" = 2 ]
check no-file       [ "$(rc=0; "$S" serve -m "$tmp/none.gguf" --port 0 >/dev/null 2>"$tmp/err" || rc=$?; echo $rc)" = 1 ]
check no-file-msg   grep -q "none.gguf" "$tmp/err"

# chat templates: a chat model's own (chatml: its markers special pieces, <|im_end|> ends the
# turn), one named instead, llama2's and zephyr's renderings; a bad name is a usage error
"$S" model synth "$tmp/cm.gguf" --preset tiny --type q8_0 --text "$SRC/README.md" --chat-template chatml >/dev/null
"$S" model synth "$tmp/l2.gguf" --preset tiny --text "$SRC/README.md" --chat-template llama2 >/dev/null
"$S" model synth "$tmp/zz.gguf" --preset tiny --text "$SRC/README.md" --chat-template zephyr >/dev/null
HI='"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0,"return_token_ids":true'
if model=$tmp/cm.gguf start chat --no-cache; then
  check ct-models     [ "$(req GET /v1/models)" = 200 ] && [ "$(get data.0.meta.chat_template)" = chatml ]
  check ct-chat       [ "$(req POST /v1/chat/completions "{$HI}")" = 200 ]
  # BOS, <|im_start|> (ids 510 and 511 follow the 510 trained pieces), then "user"
  check ct-ids        grep -q '"prompt_token_ids":\[1,510,[0-9,]*,511,[0-9,]*,510,' "$tmp/body"
  check ct-end        [ "$(req POST /v1/chat/completions "{$HI,\"logit_bias\":{\"511\":100}}")" = 200 ]
  check ct-end-fin    [ "$(get choices.0.finish_reason)" = stop ] && [ "$(get choices.0.message.content)" = "" ]
  check ct-end-n      [ "$(get usage.completion_tokens)" = 0 ]
  check ct-text       [ "$(req POST /v1/completions '{"prompt":"<|im_start|>","max_tokens":1,"return_token_ids":true}')" = 200 ]
  check ct-text-ids   grep -qv '"prompt_token_ids":\[1,510\]' "$tmp/body"
  kill -TERM "$pid"; wait "$pid"
else
  check ct-start false; cat "$tmp/chat.err"
fi
if model=$tmp/cm.gguf start chatp --no-cache --chat-template plain; then
  check ct-plain      [ "$(req POST /v1/chat/completions "{$HI}")" = 200 ]
  check ct-plain-ids  grep -vq '"prompt_token_ids":\[[0-9,]*510' "$tmp/body"
  check ct-plain-meta [ "$(req GET /v1/models)" = 200 ] && [ "$(get data.0.meta.chat_template)" = plain ]
  kill -TERM "$pid"; wait "$pid"
else
  check ct-plain-start false; cat "$tmp/chatp.err"
fi
# llama2: the chat's ids are those of its rendering sent as a completion (no special pieces in one
# turn); zephyr: a turn ends with EOS (id 2) as a special piece
if model=$tmp/l2.gguf start l2 --no-cache; then
  check ct-l2         [ "$(req POST /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":1,"temperature":0,"return_token_ids":true}')" = 200 ]
  sed -n 's/.*"prompt_token_ids":\[\([0-9,]*\)\].*/\1/p' "$tmp/body" >"$tmp/l2chat"
  check ct-l2-text    [ "$(req POST /v1/completions '{"prompt":"[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]","max_tokens":1,"temperature":0,"return_token_ids":true}')" = 200 ]
  sed -n 's/.*"prompt_token_ids":\[\([0-9,]*\)\].*/\1/p' "$tmp/body" >"$tmp/l2text"
  check ct-l2-same    cmp -s "$tmp/l2chat" "$tmp/l2text"
  kill -TERM "$pid"; wait "$pid"
else
  check ct-l2-start false; cat "$tmp/l2.err"
fi
if model=$tmp/zz.gguf start zz --no-cache; then
  check ct-zz         [ "$(req POST /v1/chat/completions "{$HI}")" = 200 ]
  check ct-zz-eos     grep -q '"prompt_token_ids":\[1,[0-9,]*,2,[0-9,]*\]' "$tmp/body"
  check ct-zz-meta    [ "$(req GET /v1/models)" = 200 ] && [ "$(get data.0.meta.chat_template)" = zephyr ]
  kill -TERM "$pid"; wait "$pid"
else
  check ct-zz-start false; cat "$tmp/zz.err"
fi
# fill in the middle ("suffix"): BOS, <PRE>, the prompt, <SUF>, the suffix, <MID> (ids 508-510
# after the 508 trained pieces); <EOT> ends the answer; a model without the markers says so
"$S" model synth "$tmp/fim.gguf" --preset tiny --type q8_0 --text "$SRC/README.md" --fim >/dev/null
if model=$tmp/fim.gguf start fim --no-cache; then
  check fim           [ "$(req POST /v1/completions '{"prompt":"def f(","suffix":"):","max_tokens":3,"temperature":0,"return_token_ids":true}')" = 200 ]
  check fim-ids       grep -q '"prompt_token_ids":\[1,508,[0-9,]*,509,[0-9,]*,510\]' "$tmp/body"
  check fim-eot       [ "$(req POST /v1/completions '{"prompt":"def f(","suffix":"):","max_tokens":3,"temperature":0,"logit_bias":{"511":100}}')" = 200 ]
  check fim-eot-fin   [ "$(get choices.0.finish_reason)" = stop ] && [ "$(get choices.0.text)" = "" ]
  check fim-echo      [ "$(req POST /v1/completions '{"prompt":"a","suffix":"b","echo":true}')" = 400 ]
  kill -TERM "$pid"; wait "$pid"
else
  check fim-start false; cat "$tmp/fim.err"
fi
if model=$tmp/l2.gguf start nofim --no-cache; then
  check fim-none      [ "$(req POST /v1/completions '{"prompt":"a","suffix":"b"}')" = 400 ]
  check fim-none-msg  msg_has 'suffix: this model has no fill-in-the-middle tokens'
  kill -TERM "$pid"; wait "$pid"
else
  check fim-none-start false
fi
check ct-bad        bad --chat-template jinja
check ct-bad-msg    grep -q -- "--chat-template 'jinja'" "$tmp/err"

echo "serve: $pass passed, $fail failed"
[ "$fail" = 0 ]
