//===- Tokenizer.cpp - Hugging Face byte-level BPE tokenizers
//--------------===//

#include "runtime/Tokenizer/Tokenizer.h"

#include "runtime/Tokenizer/Json.h"
#include "runtime/Tokenizer/Unicode.h"

#include <fstream>
#include <sstream>

namespace folio {

namespace {

using json::Value;

/// The string field \p key of \p obj, or null when absent.
Expected<const std::string *>
optionalString(const Value &obj, const std::string &path, const char *key) {
  const Value *v = obj.find(key);
  if (!v || v->isNull())
    return static_cast<const std::string *>(nullptr);
  if (!v->isString())
    return json::typeError(path + "." + key, "a string", *v);
  return &v->asString();
}

Status readBool(const Value &obj, const std::string &path, const char *key,
                bool &out) {
  const Value *v = obj.find(key);
  if (!v || v->isNull())
    return Status::ok(); // keep the default
  if (!v->isBool())
    return json::typeError(path + "." + key, "a boolean", *v);
  out = v->asBool();
  return Status::ok();
}

/// "'<path>' must be null" for the parts of a tokenizer.json that would
/// change tokenization in ways this reader does not implement.
Status requireNull(const Value &root, const char *key, const char *why) {
  const Value *v = root.find(key);
  if (v && !v->isNull())
    return Status::invalidArgument(std::string("'") + key +
                                   "' must be null: " + why);
  return Status::ok();
}

Status parsePreTokenizer(const Value &v, const std::string &path,
                         std::vector<PreTokenizerStep> &steps) {
  if (!v.isObject())
    return json::typeError(path, "an object", v);
  auto type = optionalString(v, path, "type");
  if (!type)
    return type.status();
  if (!*type)
    return Status::invalidArgument("missing field '" + path + ".type'");
  const std::string &t = **type;
  PreTokenizerStep step;
  if (t == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::ByteLevel;
    step.addPrefixSpace = true; // the defaults of tokenizers' ByteLevel
    step.useRegex = true;
    if (Status s = readBool(v, path, "add_prefix_space", step.addPrefixSpace);
        !s)
      return s;
    if (Status s = readBool(v, path, "use_regex", step.useRegex); !s)
      return s;
  } else if (t == "Split") {
    const Value *pattern = v.find("pattern");
    const Value *regex = pattern ? pattern->find("Regex") : nullptr;
    if (!regex || !regex->isString() || regex->asString() != kGpt2Pattern)
      return Status::invalidArgument(
          "'" + path +
          ".pattern' must be {\"Regex\": <the GPT-2 pattern>}: "
          "other Split patterns are not supported");
    auto behavior = optionalString(v, path, "behavior");
    if (!behavior)
      return behavior.status();
    if (*behavior && **behavior != "Isolated")
      return Status::invalidArgument("'" + path +
                                     ".behavior' must be "
                                     "\"Isolated\", got \"" +
                                     **behavior + "\"");
    bool invert = false;
    if (Status s = readBool(v, path, "invert", invert); !s)
      return s;
    if (invert)
      return Status::invalidArgument("'" + path + ".invert' must be false");
    step.kind = PreTokenizerStep::Kind::SplitGpt2;
  } else if (t == "Digits") {
    step.kind = PreTokenizerStep::Kind::Digits;
    if (Status s =
            readBool(v, path, "individual_digits", step.individualDigits);
        !s)
      return s;
  } else if (t == "Sequence") {
    const Value *list = v.find("pretokenizers");
    if (!list || !list->isArray())
      return json::typeError(path + ".pretokenizers", "an array",
                             list ? *list : Value());
    for (size_t i = 0; i < list->asArray().size(); ++i)
      if (Status s = parsePreTokenizer(
              list->asArray()[i],
              path + ".pretokenizers[" + std::to_string(i) + "]", steps);
          !s)
        return s;
    return Status::ok();
  } else {
    return Status::invalidArgument(
        "'" + path + ".type' is \"" + t +
        "\": supported pre-tokenizers are ByteLevel, Split (GPT-2 pattern), "
        "Digits and Sequence");
  }
  steps.push_back(step);
  return Status::ok();
}

Status parseAddedToken(const Value &v, const std::string &path,
                       AddedToken &tok) {
  if (!v.isObject())
    return json::typeError(path, "an object", v);
  const Value *id = v.find("id");
  std::optional<int64_t> i = id ? id->asInteger() : std::nullopt;
  if (!i || *i < 0 || *i > BPEModel::kMaxTokenId)
    return Status::invalidArgument("'" + path +
                                   ".id' must be an integer id "
                                   "in [0, " +
                                   std::to_string(BPEModel::kMaxTokenId) + "]");
  tok.id = static_cast<TokenId>(*i);
  const Value *content = v.find("content");
  if (!content || !content->isString())
    return json::typeError(path + ".content", "a string",
                           content ? *content : Value());
  tok.content = content->asString();
  if (tok.content.empty())
    return Status::invalidArgument("'" + path + ".content' must not be empty");
  bool singleWord = false;
  for (auto [key, flag] : {std::pair{"special", &tok.special},
                           {"lstrip", &tok.lstrip},
                           {"rstrip", &tok.rstrip},
                           {"single_word", &singleWord}})
    if (Status s = readBool(v, path, key, *flag); !s)
      return s;
  tok.normalized = !tok.special; // tokenizers' default
  if (Status s = readBool(v, path, "normalized", tok.normalized); !s)
    return s;
  if (singleWord)
    return Status::invalidArgument("'" + path +
                                   ".single_word' must be false: "
                                   "word-boundary matching is not supported");
  return Status::ok();
}

/// Byte length of the whitespace run ending at \p end (not before \p floor).
size_t whitespaceBefore(std::string_view text, size_t floor, size_t end) {
  size_t start = end;
  while (start > floor) {
    size_t p = start - 1;
    while (p > floor && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80)
      --p;
    size_t q = p;
    char32_t cp;
    if (!unicode::decodeUtf8(text, q, cp) ||
        unicode::classify(cp) != unicode::CharClass::Whitespace)
      break;
    start = p;
  }
  return end - start;
}

size_t whitespaceAfter(std::string_view text, size_t begin) {
  size_t pos = begin;
  while (pos < text.size()) {
    size_t q = pos;
    char32_t cp;
    if (!unicode::decodeUtf8(text, q, cp) ||
        unicode::classify(cp) != unicode::CharClass::Whitespace)
      break;
    pos = q;
  }
  return pos - begin;
}

} // namespace

Expected<Tokenizer> Tokenizer::fromFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::notFound("cannot open tokenizer file '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  Expected<Tokenizer> tok = fromJson(buffer.str());
  if (!tok)
    return Status::error(tok.status().code(),
                         path + ": " + tok.status().message());
  return tok;
}

Expected<Tokenizer> Tokenizer::fromJson(std::string_view jsonText) {
  Expected<Value> parsed = json::parse(jsonText);
  if (!parsed)
    return parsed.status();
  const Value &root = *parsed;
  if (!root.isObject())
    return json::typeError("(root)", "an object", root);

  Tokenizer tok;
  for (auto [key, why] :
       {std::pair{"normalizer", "normalizers are not supported"},
        {"truncation", "encode() does not truncate"},
        {"padding", "encode() does not pad"}})
    if (Status s = requireNull(root, key, why); !s)
      return s;

  const Value *model = root.find("model");
  if (!model)
    return Status::invalidArgument("missing field 'model'");
  if (!model->isObject())
    return json::typeError("model", "an object", *model);
  auto modelType = optionalString(*model, "model", "type");
  if (!modelType)
    return modelType.status();
  if (*modelType && **modelType != "BPE")
    return Status::invalidArgument("'model.type' is \"" + **modelType +
                                   "\": only BPE is supported");
  Expected<BPEModel> bpe = BPEModel::fromJson(*model);
  if (!bpe)
    return bpe.status();
  tok.model_ = std::move(*bpe);

  const Value *pre = root.find("pre_tokenizer");
  if (!pre || pre->isNull())
    return Status::invalidArgument("'pre_tokenizer' must be ByteLevel (or a "
                                   "Sequence ending in ByteLevel), got null");
  if (Status s = parsePreTokenizer(*pre, "pre_tokenizer", tok.preTokenizer_);
      !s)
    return s;
  size_t byteLevels = 0;
  for (const PreTokenizerStep &step : tok.preTokenizer_)
    byteLevels += step.kind == PreTokenizerStep::Kind::ByteLevel;
  if (byteLevels != 1 ||
      tok.preTokenizer_.back().kind != PreTokenizerStep::Kind::ByteLevel)
    return Status::invalidArgument(
        "'pre_tokenizer' must contain exactly one ByteLevel, as its last step");

  if (const Value *post = root.find("post_processor");
      post && !post->isNull()) {
    const Value *type = post->find("type");
    if (!type || !type->isString() || type->asString() != "ByteLevel")
      return Status::invalidArgument(
          "'post_processor.type' must be \"ByteLevel\" (or the post-processor "
          "null): processors that add tokens are not supported");
  }
  const Value *decoder = root.find("decoder");
  const Value *decoderType = decoder ? decoder->find("type") : nullptr;
  if (!decoderType || !decoderType->isString() ||
      decoderType->asString() != "ByteLevel")
    return Status::invalidArgument("'decoder.type' must be \"ByteLevel\"");

  if (const Value *added = root.find("added_tokens");
      added && !added->isNull()) {
    if (!added->isArray())
      return json::typeError("added_tokens", "an array", *added);
    for (size_t i = 0; i < added->asArray().size(); ++i) {
      AddedToken a;
      if (Status s =
              parseAddedToken(added->asArray()[i],
                              "added_tokens[" + std::to_string(i) + "]", a);
          !s)
        return s;
      if (const std::string *existing = tok.model_.idToToken(a.id);
          existing && *existing != a.content)
        return Status::invalidArgument(
            "'added_tokens[" + std::to_string(i) + "]': id " +
            std::to_string(a.id) + " is \"" + *existing +
            "\" in model.vocab, not \"" + a.content + "\"");
      if (tok.addedById_.count(a.id))
        return Status::invalidArgument("'added_tokens[" + std::to_string(i) +
                                       "]': id " + std::to_string(a.id) +
                                       " appears twice");
      if (a.special)
        tok.specialContents_.insert(a.content);
      tok.addedById_[a.id] = tok.added_.size();
      tok.added_.push_back(std::move(a));
    }
  }
  tok.vocabSize_ = tok.model_.vocabSize();
  for (const AddedToken &a : tok.added_)
    if (!tok.model_.tokenToId(a.content))
      ++tok.vocabSize_;
  return tok;
}

void Tokenizer::splitAdded(std::string_view text, bool normalizedPass,
                           std::vector<Segment> &out) const {
  size_t emitted = 0, pos = 0;
  while (pos < text.size()) {
    const AddedToken *best = nullptr;
    for (const AddedToken &a : added_)
      if (a.normalized == normalizedPass &&
          text.compare(pos, a.content.size(), a.content) == 0 &&
          (!best || a.content.size() > best->content.size()))
        best = &a;
    if (!best) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + best->content.size();
    if (best->lstrip)
      start -= whitespaceBefore(text, emitted, start);
    if (best->rstrip)
      stop += whitespaceAfter(text, stop);
    if (emitted < start)
      out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), best->id});
    emitted = pos = stop;
  }
  if (emitted < text.size())
    out.push_back({text.substr(emitted), -1});
}

Expected<std::vector<TokenId>> Tokenizer::encode(std::string_view text) const {
  if (size_t bad = unicode::findInvalidUtf8(text);
      bad != std::string_view::npos)
    return Status::invalidArgument("text is not valid UTF-8 (byte offset " +
                                   std::to_string(bad) + ")");
  // Added tokens come out in two passes, those matched on the raw text
  // first, then those matched on normalized text (the same text here, as
  // there is no normalizer), as tokenizers' AddedVocabulary does.
  std::vector<Segment> raw, segments;
  splitAdded(text, /*normalizedPass=*/false, raw);
  for (const Segment &seg : raw) {
    if (seg.id >= 0)
      segments.push_back(seg);
    else
      splitAdded(seg.text, /*normalizedPass=*/true, segments);
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 1);
  for (const Segment &seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    for (const std::string &piece : preTokenize(seg.text, preTokenizer_))
      model_.encodePiece(piece, ids);
  }
  return ids;
}

Expected<std::string> Tokenizer::decode(const std::vector<TokenId> &ids,
                                        bool skipSpecialTokens) const {
  std::string bytes;
  for (TokenId id : ids) {
    const std::string *token = nullptr;
    if (const AddedToken *a = findAdded(id))
      token = &a->content;
    else
      token = model_.idToToken(id);
    if (!token)
      return Status::invalidArgument("token id " + std::to_string(id) +
                                     " is not in the vocabulary");
    if (skipSpecialTokens && specialContents_.count(*token))
      continue;
    // Byte-level characters map back to their bytes; a token with any other
    // character (an added token such as "<|a b|>") is taken as it is.
    size_t start = bytes.size(), pos = 0;
    bool byteLevel = true;
    while (pos < token->size()) {
      char32_t cp;
      int b = -1;
      if (unicode::decodeUtf8(*token, pos, cp))
        b = byteLevelByte(cp);
      if (b < 0) {
        byteLevel = false;
        break;
      }
      bytes += static_cast<char>(b);
    }
    if (!byteLevel) {
      bytes.resize(start);
      bytes += *token;
    }
  }
  return unicode::repairUtf8(bytes);
}

std::optional<TokenId> Tokenizer::tokenToId(std::string_view token) const {
  for (const AddedToken &a : added_)
    if (a.content == token)
      return a.id;
  return model_.tokenToId(token);
}

std::optional<std::string> Tokenizer::idToToken(TokenId id) const {
  if (const AddedToken *a = findAdded(id))
    return a->content;
  if (const std::string *t = model_.idToToken(id))
    return *t;
  return std::nullopt;
}

bool Tokenizer::isSpecial(TokenId id) const {
  const AddedToken *a = findAdded(id);
  return a && a->special;
}

const AddedToken *Tokenizer::findAdded(TokenId id) const {
  auto it = addedById_.find(id);
  return it == addedById_.end() ? nullptr : &added_[it->second];
}

} // namespace folio
