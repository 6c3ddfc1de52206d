-- kind: pair
-- matches: Nangia et al. 2020, CrowS-Pairs metric.py (mask_unigram): the sum of the masked log-probabilities of the tokens the two sentences share (difflib over token ids, the first and last shared position, [CLS] and [SEP], left out)
-- A masked LM only. metric.py rounds each side's score to 3 decimals before it compares them: the
-- comparison's business, not this score's.
SELECT p.pair_id, p.side, p.text, sum(s.logprob) AS score, count(*) AS n
FROM pairs p
JOIN scores s ON s.text = p.text AND s.position = p.position AND s.masked
WHERE p.shared
GROUP BY p.pair_id, p.side, p.text
