// Chat prompt formats without a Jinja engine (runtime/ml.h: ml_chat_*). A model's chat template
// (Jinja source, from its tokenizer) is recognised by its markers and rendered by hand-written code
// that reproduces what the real template gives, byte for byte; verify/tests/test_chat.py compares
// this against an outside Jinja engine (@huggingface/jinja, inside tools/npm's @lenml/tokenizers)
// on the real templates in verify/data/chat_templates.json.
//
//   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
//           (Qwen2.5, SmolLM2-Instruct; a default system prompt the template writes when the
//           first message is not a system message is taken from the template text)
//   zephyr  <|ROLE|>\nCONTENT</s>\n ... <|assistant|>\n            (TinyLlama-Chat)
//   llama2  <s>[INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] ASSISTANT </s><s>[INST] ...
//           (user/assistant must alternate; contents stripped; no assistant header exists)
//   llama3  <|begin_of_text|><|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> ...
//           <|start_header_id|>assistant<|end_header_id|>\n\n      (Llama 3 Instruct; contents trimmed)
//           Llama 3.1/3.2/3.3 templates always open with a system block "Cutting Knowledge Date:
//           December 2023\nToday Date: DATE\n\n" + the system message (DATE: the template's
//           date_string default, or today's date where it calls strftime_now, as transformers does)
//   qwen3   ChatML turns without a default system prompt; an assistant message's <think>...</think>
//           reasoning is kept only after the last user query ("<think>\nR\n</think>\n\n" + answer),
//           dropped before it; generation prompt <|im_start|>assistant\n (enable_thinking = false:
//           + "<think>\n\n</think>\n\n") (Qwen3; recognised by its <think>, reasoning_content and
//           last_query_index)
// Tools (ChatTools below; C++ only, the C API renders without): Qwen2.5's ChatML and Qwen3 write a
// "# Tools ... <tools>" block into the system turn, calls as <tool_call> lines and tool results as
// <tool_response> blocks in a user turn; Llama 3.1+ write "Environment: ipython", the tools in the
// first user message, a call as the assistant's JSON and results as ipython turns. Checked against
// Python jinja2 (verify/chat_tools_jinja2.py, verify/tests/test_chat_tools.cc).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "runtime/ml.h"

namespace ml {

// What a renderer needs besides the messages: the template source ("" when none: the built-in
// form) and the texts of the template variables bos_token and eos_token.
struct ChatTemplateVars {
  std::string source, bos, eos;
  std::string today;  // "01 Dec 2026": strftime_now("%d %b %Y") for Llama 3.2's dated system block
};

// What tool calling adds to a conversation (issue 34), for the formats whose templates define it
// (chat_tools_supported). Everything that is JSON arrives here already serialized as the template's
// tojson writes it (structured/tools.h makes it; the runtime holds no JSON code):
//   on     the template's `tools` is given (false: tools undefined, as tool_choice "none" renders)
//   tools  each tool object as the template writes it (Qwen: tojson; Llama 3.1+: tojson(indent=4))
//   calls  per message (empty, or one entry per message): an assistant message's tool_calls as
//          (name, arguments as tojson writes them); empty for a message without tool_calls
// The role "tool" (a tool result) is accepted only with a ChatTools; its content is written as given
// (Llama 3.1+ write tojson(content): the caller passes that text).
struct ChatTools {
  bool on = false;
  std::vector<std::string> tools;
  std::vector<std::vector<std::pair<std::string, std::string>>> calls;
};

// Whether the template (chatml, qwen3, llama3 with its source) defines tools: Qwen2.5's ChatML
// (<tool_call> in its source), Qwen3, Llama 3.1+ (its dated system block with "Environment: ipython").
bool chat_tools_supported(ml_chat_format f, const std::string &source);

// Today's date (UTC) as strftime("%d %b %Y") in the C locale gives it.
std::string chat_today();

// The format whose markers the template holds, ML_CHAT_UNKNOWN when none fits.
ml_chat_format chat_detect_source(const std::string &source);

// The default system prompt a ChatML template writes when the first message is not a system
// message (Qwen2.5: "You are Qwen, created by Alibaba Cloud. ..."); false when it has none.
bool chatml_default_system(const std::string &source, std::string *text);

// Renders messages[0..n) (n >= 1) as the template does; add: ML_CHAT_ASSISTANT, ML_CHAT_NO_THINKING
// flags (runtime/ml.h; true = the assistant header); ML_E_ARG naming the message on a bad role, NULL
// or invalid UTF-8 content, or a conversation the template refuses (llama2: roles not alternating
// user/assistant).
// With tools (non-NULL; the format must support them): as the template renders with tools /
// tool_calls / tool messages; ML_E_ARG for what the template refuses (Llama 3.1+: more than one
// tool call in a message, tools without a message to put them in).
ml_status chat_render(ml_chat_format f, const ChatTemplateVars &vars, const ml_chat_message *messages, int n,
                      int add, std::string *out, const ChatTools *tools = nullptr);

// chat_render with the context's template, BOS/EOS texts and today's date (runtime/chat_api.cc), for
// C++ callers that pass tools (ml_chat_render is this without them).
ml_status chat_render_ctx(const ml_ctx *ctx, ml_chat_format f, const ml_chat_message *messages, int n, int add,
                          const ChatTools *tools, std::string *out);

}  // namespace ml
