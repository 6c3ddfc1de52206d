-- Benjamini-Yekutieli over the rows of `family`: the FDR under any dependence between tests.
-- adjusted p(k) = min over j >= k of min(1, c(m) * m * p(j) / j), c(m) = sum_{i=1..m} 1/i.
WITH ranked AS (
    SELECT *,
           row_number() OVER (ORDER BY p_value, result_id) AS p_rank,
           count(*) OVER () AS m
    FROM family
),
harmonic AS (
    SELECT sum(1.0 / i) AS c FROM range(1, (SELECT count(*) FROM family) + 1) t(i)
),
adjusted AS (
    SELECT ranked.*,
           min(least(1.0, harmonic.c * m * p_value / p_rank))
               OVER (ORDER BY p_rank DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS p_adjusted
    FROM ranked, harmonic
)
SELECT *, p_adjusted <= coalesce(getvariable('alpha'), 0.01) AS rejected
FROM adjusted
ORDER BY p_rank;
