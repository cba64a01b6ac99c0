SELECT a.admission_id,
       a.patient_id,
       p.patient_name,
       a.admission_date,
       a.discharge_date,
       a.ward_code,
       a.attending_doctor_id,
       a.diagnosis_code
FROM admissions a
JOIN patients p ON p.patient_id = a.patient_id
WHERE a.admission_date >= DATE '2026-01-01'
  AND a.ward_code = 'W07'
ORDER BY a.admission_date;
