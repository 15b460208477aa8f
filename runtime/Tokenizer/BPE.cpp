//===- BPE.cpp - Byte-pair-encoding model
//----------------------------------===//

#include "runtime/Tokenizer/BPE.h"

#include "runtime/Tokenizer/Unicode.h"

#include <cstdio>
#include <queue>

namespace folio {

namespace {

/// A JSON id that is an integer in [0, kMaxTokenId].
bool readId(const json::Value &v, TokenId &id) {
  std::optional<int64_t> i = v.asInteger();
  if (!i || *i < 0 || *i > BPEModel::kMaxTokenId)
    return false;
  id = static_cast<TokenId>(*i);
  return true;
}

/// Fields that must be absent, null, or (for dropout) zero: they change
/// tokenization in ways this reader does not implement.
Status checkUnsupported(const json::Value &model) {
  if (const json::Value *d = model.find("dropout"))
    if (!d->isNull() && !(d->isNumber() && d->asNumber() == 0.0))
      return Status::invalidArgument(
          "'model.dropout' must be null or 0: BPE dropout is random");
  for (const char *field : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json::Value *v = model.find(field))
      if (!v->isNull() && !(v->isString() && v->asString().empty()))
        return Status::invalidArgument(std::string("'model.") + field +
                                       "' must be null: only byte-level BPE "
                                       "is supported");
  return Status::ok();
}

Status readFlag(const json::Value &model, const char *field, bool &out) {
  const json::Value *v = model.find(field);
  if (!v || v->isNull())
    return Status::ok();
  if (!v->isBool())
    return json::typeError(std::string("model.") + field, "a boolean", *v);
  out = v->asBool();
  return Status::ok();
}

/// One merge rule: "a b" (tokenizers before 0.20) or ["a", "b"].
Status readMergePair(const json::Value &m, const std::string &path,
                     std::string &left, std::string &right) {
  if (m.isString()) {
    const std::string &s = m.asString();
    size_t space = s.find(' ');
    if (space == std::string::npos ||
        s.find(' ', space + 1) != std::string::npos)
      return Status::invalidArgument("'" + path +
                                     "' must be two tokens "
                                     "separated by one space, got \"" +
                                     s + "\"");
    left = s.substr(0, space);
    right = s.substr(space + 1);
    return Status::ok();
  }
  if (m.isArray() && m.asArray().size() == 2 && m.asArray()[0].isString() &&
      m.asArray()[1].isString()) {
    left = m.asArray()[0].asString();
    right = m.asArray()[1].asString();
    return Status::ok();
  }
  return json::typeError(path, "a string \"a b\" or an array [\"a\", \"b\"]",
                         m);
}

} // namespace

Expected<BPEModel> BPEModel::fromJson(const json::Value &model) {
  BPEModel bpe;
  if (Status s = checkUnsupported(model); !s)
    return s;

  const json::Value *vocab = model.find("vocab");
  if (!vocab)
    return Status::invalidArgument("missing field 'model.vocab'");
  if (!vocab->isObject())
    return json::typeError("model.vocab", "an object of token: id", *vocab);
  TokenId maxId = -1;
  for (const json::Member &m : vocab->asObject()) {
    TokenId id;
    if (!readId(m.second, id))
      return Status::invalidArgument("'model.vocab[\"" + m.first +
                                     "\"]' must be an integer id in [0, " +
                                     std::to_string(kMaxTokenId) + "]");
    if (unicode::findInvalidUtf8(m.first) != std::string_view::npos)
      return Status::invalidArgument(
          "'model.vocab': a token is not valid UTF-8");
    bpe.vocab_[m.first] = id;
    maxId = std::max(maxId, id);
  }
  bpe.tokens_.assign(size_t(maxId + 1), std::string());
  bpe.hasToken_.assign(size_t(maxId + 1), false);
  for (const auto &[token, id] : bpe.vocab_) {
    if (bpe.hasToken_[id])
      return Status::invalidArgument("'model.vocab': id " + std::to_string(id) +
                                     " is used by \"" + bpe.tokens_[id] +
                                     "\" and \"" + token + "\"");
    bpe.tokens_[id] = token;
    bpe.hasToken_[id] = true;
  }

  const json::Value *merges = model.find("merges");
  if (!merges)
    return Status::invalidArgument("missing field 'model.merges'");
  if (!merges->isArray())
    return json::typeError("model.merges", "an array", *merges);
  const json::Array &rules = merges->asArray();
  for (size_t i = 0; i < rules.size(); ++i) {
    std::string path = "model.merges[" + std::to_string(i) + "]";
    std::string left, right;
    if (Status s = readMergePair(rules[i], path, left, right); !s)
      return s;
    auto l = bpe.vocab_.find(left), r = bpe.vocab_.find(right),
         m = bpe.vocab_.find(left + right);
    for (auto [it, tok] : {std::pair{l, &left}, {r, &right}})
      if (it == bpe.vocab_.end())
        return Status::invalidArgument("'" + path + "': token \"" + *tok +
                                       "\" is not in model.vocab");
    if (m == bpe.vocab_.end())
      return Status::invalidArgument("'" + path + "': merged token \"" + left +
                                     right + "\" is not in model.vocab");
    // A repeated pair keeps its last rank, as tokenizers' HashMap does.
    bpe.merges_[pairKey(l->second, r->second)] =
        Merge{static_cast<int32_t>(i), m->second};
  }

  if (const json::Value *unk = model.find("unk_token"); unk && !unk->isNull()) {
    if (!unk->isString())
      return json::typeError("model.unk_token", "a string or null", *unk);
    auto it = bpe.vocab_.find(unk->asString());
    if (it == bpe.vocab_.end())
      return Status::invalidArgument("'model.unk_token' \"" + unk->asString() +
                                     "\" is not in model.vocab");
    bpe.unkId_ = it->second;
  }
  for (auto [field, flag] : {std::pair{"fuse_unk", &bpe.fuseUnk_},
                             {"byte_fallback", &bpe.byteFallback_},
                             {"ignore_merges", &bpe.ignoreMerges_}})
    if (Status s = readFlag(model, field, *flag); !s)
      return s;
  return bpe;
}

std::optional<TokenId> BPEModel::tokenToId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end())
    return std::nullopt;
  return it->second;
}

const std::string *BPEModel::idToToken(TokenId id) const {
  if (id < 0 || size_t(id) >= tokens_.size() || !hasToken_[id])
    return nullptr;
  return &tokens_[id];
}

const BPEModel::Merge *BPEModel::findMerge(TokenId a, TokenId b) const {
  auto it = merges_.find(pairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BPEModel::encodePiece(std::string_view piece,
                           std::vector<TokenId> &out) const {
  if (piece.empty())
    return;
  if (ignoreMerges_)
    if (auto id = tokenToId(piece)) {
      out.push_back(*id);
      return;
    }

  // Initial symbols: one per character, as a doubly linked list over a
  // vector so merges need no shifting. A removed symbol has alive == false.
  struct Symbol {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  auto add = [&](TokenId id) {
    int n = static_cast<int>(symbols.size());
    symbols.push_back({id, n - 1, n + 1, true});
  };
  TokenId pendingUnk = -1; // an unknown token not yet added (fuse_unk)
  size_t pos = 0;
  while (pos < piece.size()) {
    size_t start = pos;
    char32_t cp;
    if (!unicode::decodeUtf8(piece, pos, cp))
      ++pos; // pieces are valid UTF-8; never taken
    std::string_view ch = piece.substr(start, pos - start);
    if (auto id = tokenToId(ch)) {
      if (pendingUnk >= 0) {
        add(pendingUnk);
        pendingUnk = -1;
      }
      add(*id);
      continue;
    }
    if (byteFallback_) {
      std::vector<TokenId> bytes;
      for (char c : ch) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", unsigned(c) & 0xFF);
        auto b = tokenToId(name);
        if (!b)
          break;
        bytes.push_back(*b);
      }
      if (bytes.size() == ch.size()) {
        for (TokenId b : bytes)
          add(b);
        continue;
      }
    }
    if (unkId_) {
      if (pendingUnk >= 0 && !fuseUnk_)
        add(pendingUnk);
      pendingUnk = *unkId_;
    }
    // No unknown token: the character is dropped, as tokenizers does.
  }
  if (pendingUnk >= 0)
    add(pendingUnk);
  if (symbols.empty())
    return;
  symbols.back().next = -1;

  // Candidate merges, lowest rank first, then leftmost.
  struct Candidate {
    int32_t rank;
    int pos;
    TokenId merged;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int left) {
    int right = symbols[left].next;
    if (right < 0)
      return;
    if (const Merge *m = findMerge(symbols[left].id, symbols[right].id))
      queue.push({m->rank, left, m->merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i)
    consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (!left.alive || left.next < 0)
      continue;
    // Stale when either side has changed since the candidate was queued.
    const Merge *m = findMerge(left.id, symbols[left.next].id);
    if (!m || m->merged != top.merged)
      continue;
    Symbol &right = symbols[left.next];
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = top.pos;
    if (left.prev >= 0)
      consider(left.prev);
    consider(top.pos);
  }
  for (int i = 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
}

} // namespace folio
