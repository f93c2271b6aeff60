"""The researcher's own workflow, after search has found candidates: LLM query variants, a judge scoring each
candidate against criteria the researcher writes, the researcher's persistent accept/reject selection, and
interpretive drafts that cite exact spans of the accepted sources or abstain. A wing beside `agent` and `catalog`:
it never imports either."""
