#pragma once
// The claims of the proof as text, and the issue (a failure or a finding) that names one.

#include <string>
#include <string_view>

#include "pathlift/proof.hpp"

namespace pathlift::detail::proof {

/// A claim's short id, its label in messages ("Lemma 4") and its statement as the paper's.
struct ClaimText {
  std::string_view id;
  std::string_view label;
  std::string_view statement;
};

/// The text of `claim`.
const ClaimText& claim_text(ProofClaim claim);

/// The issue "<step>: <claim label> fails: <detail>", naming the path, edge and node involved;
/// the step reads "step 3 (u = n4, e = edge 12 (n4 -> n0))" or "step 4 (base case, h = 0)".
ProofIssue make_issue(const ProofStep& s, Index index, ProofClaim claim, const std::string& detail,
                      Index path = -1, EdgeId edge = -1, NodeId node = -1);

/// An issue of the certificate as a whole: `message` as given, no path, edge or node.
ProofIssue certificate_issue(Index step, ProofClaim claim, std::string message);

}  // namespace pathlift::detail::proof
