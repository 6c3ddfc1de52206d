-- kind: text
-- matches: bias-bench's generative CrowS-Pairs score (the geometric mean of the tokens' probabilities, the first given <|endoftext|>: the same order as this mean of log-probabilities, on a model whose BOS is <|endoftext|>)
-- The mean log-probability a token over the rows `sum` adds up (every row of a causal LM, the
-- masked rows of a masked LM): a sentence's score that does not grow with its length.
SELECT text, avg(logprob) AS score, count(*) AS n
FROM (SELECT *, bool_or(masked) OVER (PARTITION BY text) AS pll FROM scores)
WHERE masked = pll
GROUP BY text
