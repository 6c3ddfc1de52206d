-- Bonferroni over the rows of `family` (Dunn 1961): adjusted p = min(1, m * p).
-- Controls the family-wise error rate like Holm, and is uniformly less powerful than it;
-- here because a reader may want the plainest correction to compare with.
SELECT *,
       count(*) OVER () AS m,
       least(1.0, count(*) OVER () * p_value) AS p_adjusted,
       least(1.0, count(*) OVER () * p_value) <= coalesce(getvariable('alpha'), 0.01) AS rejected
FROM family
ORDER BY p_value, result_id;
