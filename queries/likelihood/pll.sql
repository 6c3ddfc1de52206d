-- kind: text
-- matches: Salazar et al. 2020 pseudo-log-likelihood (minicons MaskedLMScorer, PLL_metric="original", sum): each token masked in turn
-- A masked LM only: the sum of log P(token | the rest) over the masked rows. No row for a text
-- of a causal LM (it has none).
SELECT text, sum(logprob) AS score, count(*) AS n
FROM scores
WHERE masked
GROUP BY text
