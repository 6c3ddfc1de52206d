-- Holm-Bonferroni over the rows of `family` (May et al. 2019, appendix D; Holm 1979).
-- Sort by p; adjusted p(k) = max over j <= k of min(1, (m - j + 1) * p(j)).
-- Rejecting where adjusted p <= alpha is the step-down rule: reject H(1..k-1) for the
-- smallest k with p(k) > alpha / (m - k + 1).
WITH ranked AS (
    SELECT *,
           row_number() OVER (ORDER BY p_value, result_id) AS p_rank,
           count(*) OVER () AS m
    FROM family
),
adjusted AS (
    SELECT *,
           max(least(1.0, (m - p_rank + 1) * p_value))
               OVER (ORDER BY p_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS p_adjusted
    FROM ranked
)
SELECT *, p_adjusted <= coalesce(getvariable('alpha'), 0.01) AS rejected
FROM adjusted
ORDER BY p_rank;
