-- kind: text
-- matches: lm-evaluation-harness (crows_pairs, loglikelihood with an empty context): the sum of every token's log-probability, the first given the BOS token; on a masked LM, its PLL (Salazar et al. 2020)
-- A sentence's log-probability: the sum over the rows that score the sentence, which are every
-- row of a causal LM and the masked rows (PLL) of a masked LM.
SELECT text, sum(logprob) AS score, count(*) AS n
FROM (SELECT *, bool_or(masked) OVER (PARTITION BY text) AS pll FROM scores)
WHERE masked = pll
GROUP BY text
