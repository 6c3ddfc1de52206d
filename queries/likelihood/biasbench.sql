-- kind: pair
-- matches: bias-bench (Meade et al. 2022) CrowS-Pairs, masked LMs (_likelihood_score): the mean masked log-probability of the tokens that differ between the two sentences (difflib's non-equal spans over token ids), each masked in turn
-- A masked LM only. A side with no differing token (the other side's insertion) has no row:
-- bias-bench skips such a pair. bias-bench rounds each side's score to 3 decimals before it
-- compares them: the comparison's business, not this score's.
SELECT p.pair_id, p.side, p.text, avg(s.logprob) AS score, count(*) AS n
FROM pairs p
JOIN scores s ON s.text = p.text AND s.position = p.position AND s.masked
WHERE NOT p.shared
GROUP BY p.pair_id, p.side, p.text
