"""The researcher's own workflow, after search has found candidates: a judge scoring each candidate against
criteria the researcher writes, the review and the researcher's persistent accept/reject selection, and
interpretive drafts that cite exact spans of the accepted sources or abstain. It starts from the runs a search
records (`search/`, a service below it: a plain search never loads this package). A wing beside `agent` and
`catalog`: it never imports either."""
