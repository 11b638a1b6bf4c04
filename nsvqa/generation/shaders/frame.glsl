
layout(std140) uniform Frame {
    mat4 u_viewproj;
    mat4 u_light_vp;
    vec4 u_eye;          // xyz, w: gain of the metal's environment reflection
    vec4 u_key;          // xyz: unit direction toward the key light, w: intensity
    vec4 u_fill;         // xyz: unit direction toward the fill light, w: intensity
    vec4 u_bg;           // rgb: display-space background grey, w: ambient
    vec4 u_shadow_par;   // x: PCF radius (shadow uv), y: normal offset, z: offset x slope
    vec4 u_ground_par;   // xy: the camera's ground point, z, w: ground fade start, end distance
};
