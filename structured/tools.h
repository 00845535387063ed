// Tool calls (issue 34 item 4): the JSON half of rendering OpenAI `tools` / `tool_calls` / `tool`
// messages into a chat template, forcing a call with the JSON constraint, and parsing a reply back
// into calls. The text half (where each piece goes in a template) is runtime/text/chat.h
// (ChatTools, chat_render); this file only serializes and parses JSON (nlohmann ordered_json: the key
// order of the request is kept, as the templates' tojson keeps a Python dict's).
//
// Formats (chat_tools_supported): Qwen2.5 ChatML and Qwen3 write tools as tojson lines in <tools>
// and calls as <tool_call>\n{"name": N, "arguments": A}\n</tool_call>; Llama 3.1+ write tools as
// tojson(indent=4) in the first user message and a call as the whole reply {"name": N, "parameters": A}.
// Proof: verify/chat_tools_jinja2.py (Python jinja2 on the real templates) writes
// verify/data/chat_tools_expected.json, which verify/tests/test_chat_tools.cc compares byte for byte.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/ml.h"
#include "runtime/text/chat.h"

namespace ml::tools {

using ojson = nlohmann::ordered_json;

// Hugging Face's tojson filter: json.dumps(v, ensure_ascii=False, indent=indent) — separators ", "
// and ": " (with an indent: "," at line ends), key order kept, non-ASCII written as UTF-8.
std::string tojson(const ojson &v, int indent = -1);

// One call of an assistant message: the function's name and its arguments (a JSON object).
struct Call {
  std::string name;
  ojson arguments;
};

// The ChatTools of a conversation for format f: `tools` (the request's array of tool objects, each
// written whole as the template does; ignored when !on), and per message its calls.
ChatTools chat_tools(ml_chat_format f, bool on, const ojson &tools, const std::vector<std::vector<Call>> &calls);

// A tool message's content as the template writes it: Llama 3.1+ write tojson(content) (a string is
// "iterable" to Jinja), the Qwen templates the text itself.
std::string tool_content(ml_chat_format f, const std::string &content);

// Forcing a call (tool_choice "required" or a named function): the text that opens the reply, added
// after the generation prompt (Qwen: "<tool_call>\n"; Llama 3.1+: nothing), and the JSON schema the
// constraint holds the call to: an object with "name" const and "arguments" (Llama: "parameters")
// the function's `parameters` schema; with several functions an anyOf of one per function. `only`:
// the named function ("" = any). Returns "" with *error set when `only` names no function.
std::string call_prefix(ml_chat_format f);
std::string call_schema(ml_chat_format f, const ojson &tools, const std::string &only, std::string *error);

// Parses a reply (the text after the generation prompt, the forced prefix included) into calls:
// Qwen: every <tool_call>{...}</tool_call> block (the last may lack its closing tag when the reply
// ended right after the JSON), the text outside them is *content (trimmed); Llama 3.1+: the whole
// reply one JSON object {"name", "parameters" (or "arguments")}. false (and no calls) when the reply
// holds no well-formed call: it is then plain content.
bool parse_reply(ml_chat_format f, const std::string &text, std::string *content, std::vector<Call> *calls);

// ml_server's request fields, validated; each returns "" or the one-line error naming the field as
// the request spells it ('tools[1].function.name' must be ...).
//   check_tools        'tools': [{"type": "function", "function": {"name", "parameters"?: object}}]
//   parse_tool_choice  'tool_choice': "auto" | "none" | "required" | {"type": "function", "function":
//                      {"name": one of tools}} -> *choice ("function" for the last) and *name
//   parse_calls        an assistant message's tool_calls (at: "'messages[i].tool_calls"), the
//                      arguments string parsed into an object (the templates tojson an object)
std::string check_tools(const ojson &tools);
std::string parse_tool_choice(const ojson &v, const ojson &tools, std::string *choice, std::string *name);
std::string parse_calls(const ojson &tool_calls, const std::string &at, std::vector<Call> *out);

// OpenAI's assistant message for a reply offered tools of format f (ML_CHAT_UNKNOWN: none offered,
// the text is the content): {"role": "assistant", "content", "tool_calls": [{id "call_<id>_<k>",
// type "function", function {name, arguments: a JSON string}}]}; *finish "stop" becomes
// "tool_calls" when there are calls. reply_delta: the one streamed delta of that message (its
// content, or its tool_calls each with "index").
nlohmann::json reply_message(ml_chat_format f, const std::string &text, const std::string &id, std::string *finish);
nlohmann::json reply_delta(const nlohmann::json &message);

}  // namespace ml::tools
