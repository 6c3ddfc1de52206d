-- Benjamini-Hochberg over the rows of `family`: controls the false discovery rate.
-- adjusted p(k) = min over j >= k of min(1, m * p(j) / j).
WITH ranked AS (
    SELECT *,
           row_number() OVER (ORDER BY p_value, result_id) AS p_rank,
           count(*) OVER () AS m
    FROM family
),
adjusted AS (
    SELECT *,
           min(least(1.0, m * p_value / p_rank))
               OVER (ORDER BY p_rank DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS p_adjusted
    FROM ranked
)
SELECT *, p_adjusted <= coalesce(getvariable('alpha'), 0.01) AS rejected
FROM adjusted
ORDER BY p_rank;
