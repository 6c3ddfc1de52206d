-- The replicate families' summaries (db/034) of the results in the temp view `family`: the
-- latest summary of each (test, family encoder) with a member among the family's results, and
-- those members' result ids (so a reading places the summary after its replicates' rows).
-- A summary is not a hypothesis: it has no p and is never counted in m (docs/methods/replicates.md).
WITH mine AS (
    SELECT s.*, list(m.result_id ORDER BY m.result_id) AS member_ids
    FROM replicate_summaries s JOIN replicate_members m USING (summary_id)
    WHERE m.result_id IN (SELECT result_id FROM family)
    GROUP BY ALL)
SELECT * FROM mine
QUALIFY row_number() OVER (PARTITION BY test, encoder ORDER BY created_at DESC, summary_id DESC) = 1
ORDER BY test, encoder
