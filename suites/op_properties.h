// The run builders of the op properties, which the registry's entries name
// (suites/registry.cpp; OpRunBuilder): each builds one property's run on
// one op and dtype from the cases that op's runs share.
#pragma once

#include "suites/registry.h"

namespace flagprop {

/// P5 / P6: cases judged against the reference by flagprop.judging.checks' "op"
/// kind, each case observed once for both properties (`shared` remembers
/// it), up to three distinct failures, OpInfo's samples where the schema's
/// are rejected.
PropertyRun judgedOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                        const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared);

/// P10: P5's judging of each case after a generated history of earlier
/// calls of the same op in the same process (other values, the scalar
/// keyword arguments at 1, 2, -1, 0.5: what a cache keyed on too little
/// answers from), the history shrunk with the case; no explicit examples
/// or OpInfo fallback (P5's).
PropertyRun historyOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                         const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared);

/// P7: each case judged by the property's own check kind; a lost device
/// stops it as it stops P5 / P6.
PropertyRun checkedOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                         const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared);

/// P8: the op's LibEntry launches counted per kernel over its cases
/// (observations.hits).
PropertyRun hitsOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                      const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared);

/// P9: one measured case, its samples and summary kept (observations.timing);
/// a refusal is a skip.
PropertyRun timingOpRun(TargetSession& s, const PropertyDef& def, const OpEntry& entry, const std::string& dtype,
                        const rc::Gen<Case>& cases, const std::shared_ptr<OpRunState>& shared);

}  // namespace flagprop
