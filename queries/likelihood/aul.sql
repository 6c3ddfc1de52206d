-- kind: text
-- matches: AUL (Kaneko & Bollegala 2022): the mean log-probability of every token, nothing masked
-- A masked LM only: the mean over the unmasked pass (log P(token | the whole sentence)). No row
-- for a text of a causal LM (its rows are no unmasked pass of a masked LM).
SELECT text, avg(logprob) AS score, count(*) AS n
FROM scores
WHERE NOT masked AND text IN (SELECT text FROM scores WHERE masked)
GROUP BY text
